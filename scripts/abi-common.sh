# Shared by scripts/abi-check and scripts/abi-update (sourced, not run).
# Both must build and describe the library the same way, or the baseline and
# the check would differ for reasons that are not the ABI.

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
baseline=$root/abi/librverbs.abi
suppressions=$root/abi/librverbs.abignore
public_headers=$root/include/rverbs

# The configuration the baseline is made with (see docs/abi-policy.md).
abi_setup_args=(-Dbuildtype=debugoptimized -Dtests=false -Ddocs=disabled)

# build_library BUILD_DIR: configure if needed, build only the shared library,
# print its path.
build_library() {
	local dir=$1
	if [ ! -f "$dir/meson-private/coredata.dat" ]; then
		meson setup "$dir" "$root" "${abi_setup_args[@]}" >&2
	fi
	meson compile -C "$dir" lib/rverbs:shared_library >&2
	echo "$dir/lib/librverbs.so"
}

# describe LIBRARY OUT: write the ABI representation of LIBRARY to OUT.
describe() {
	abidw --headers-dir "$public_headers" --drop-private-types \
		--no-show-locs --no-comp-dir-path --no-corpus-path \
		--no-elf-needed --drop-undefined-syms \
		--type-id-style hash --out-file "$2" "$1"
}
