"""Whether the layer under test is built with a sanitizer: the system's
uninstrumented programs (and python3) cannot load it then, because the
sanitizer's runtime must be the first library of the process. The compat
runners skip (exit 77) on it; meson passes RVERBS_COMPAT_SANITIZE."""
import os


def sanitized():
    """Says why and returns True when the layer is sanitized."""
    value = os.environ.get("RVERBS_COMPAT_SANITIZE", "none")
    if value not in ("", "none"):
        print(f"skipped: the layer is built with -Db_sanitize={value}; the system's "
              "uninstrumented programs cannot load it (the runtime must come first)")
        return True
    return False
