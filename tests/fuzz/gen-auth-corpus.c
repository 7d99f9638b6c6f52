/*
 * Writes the seed corpus of tests/fuzz/fuzz-soft-auth.c with auth.c's own
 * encoder: MPA private data (the first byte of each file is the fuzz
 * target's flags) carrying a request block, a reply block with its MAC, the
 * same after a same-host block or followed by more bytes, and the cases the
 * reader must refuse or ignore: the other kind, a cut block, the magic
 * alone, no block, two same-host blocks, nothing at all. Each comes with
 * every secret length class (1, 64 and 65 bytes, 160) in the bytes part 2
 * of the target reads.
 *
 * usage: gen-auth-corpus DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/soft/soft.h"

static const char *dir;
static int n_seeds;

static void put(const uint8_t *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/seed-%03d", dir, n_seeds++);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

enum shape { REQUEST, REPLY, SHM_REPLY, REPLY_TRAILING, OTHER_KIND, CUT, MAGIC_ONLY, NO_BLOCK, TWO_SHM, EMPTY };

/* The flags byte, the private data of the shape, then the bytes of the
 * target's MAC part (the secret's length byte and filler). */
static void seed(enum shape s, uint8_t secret_len_byte)
{
	uint8_t buf[1 + RV_SOFT_CPD_LEN + 2 * SOFT_SHM_EXT_LEN + SOFT_AUTH_EXT_LEN + 16 + 1 + 256];
	uint8_t nonce[SOFT_AUTH_NONCE_LEN], mac[SOFT_AUTH_MAC_LEN];
	size_t len = 1, off;

	for (size_t i = 0; i < sizeof(nonce); i++)
		nonce[i] = (uint8_t)(0x30 + i);
	for (size_t i = 0; i < sizeof(mac); i++)
		mac[i] = (uint8_t)(0x80 + 3 * i);
	buf[0] = s == REQUEST || s == OTHER_KIND ? 0 : 1; /* the kind the reader expects */
	if (s == EMPTY) {
		put(buf, 1);
		return;
	}
	for (size_t i = 0; i < RV_SOFT_CPD_LEN; i++)
		buf[len++] = (uint8_t)(7 * i + 1);
	if (s == SHM_REPLY || s == TWO_SHM) {
		buf[0] |= 2;
		for (int k = 0; k < (s == TWO_SHM ? 2 : 1); k++) {
			memcpy(buf + len, "RSH2", 4);
			memset(buf + len + 4, 0x5c, SOFT_SHM_EXT_LEN - 4);
			len += SOFT_SHM_EXT_LEN;
		}
	}
	off = len;
	switch (s) {
	case REQUEST:
		len += soft_auth_block_put(buf + off, false, nonce, NULL);
		break;
	case REPLY:
	case SHM_REPLY:
	case REPLY_TRAILING:
	case TWO_SHM:
		buf[0] |= 4;
		len += soft_auth_block_put(buf + off, true, nonce, mac);
		break;
	case OTHER_KIND:
		len += soft_auth_block_put(buf + off, true, nonce, mac);
		break;
	case CUT:
		soft_auth_block_put(buf + off, true, nonce, mac);
		len += SOFT_AUTH_EXT_LEN / 2;
		break;
	case MAGIC_ONLY:
		memcpy(buf + off, "RAU1", 4);
		len += 4;
		break;
	case NO_BLOCK:
	case EMPTY:
		break;
	}
	if (s == REPLY_TRAILING) {
		buf[0] |= 8;
		memset(buf + len, 0xa7, 16);
		len += 16;
	}
	/* Part 2 of the target reads the private data as a description first
	 * (44 bytes, a same-host block with flag 2, nonce and MAC, 16 bytes
	 * with flag 8), then the secret's length byte: put it there, inside the
	 * MAC or the trailing bytes (which the reader of part 1 only copies),
	 * or after the private data. */
	{
		size_t at = 1 + RV_SOFT_CPD_LEN + (buf[0] & 2 ? SOFT_SHM_EXT_LEN : 0) + SOFT_AUTH_NONCE_LEN +
			    SOFT_AUTH_MAC_LEN + (buf[0] & 8 ? 16 : 0);

		while (len < at)
			buf[len++] = 0;
		if (len == at)
			len++;
		buf[at] = secret_len_byte;
	}
	for (int i = 0; i < 200 && len < sizeof(buf); i++)
		buf[len++] = (uint8_t)(i * 11 + secret_len_byte);
	put(buf, len);
}

int main(int argc, char **argv)
{
	/* Secret lengths 1 + byte % 160: 1, 64, 65, 160. */
	static const uint8_t secret_len_bytes[] = {0, 63, 64, 159};

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	for (int s = REQUEST; s <= EMPTY; s++)
		for (size_t k = 0; k < sizeof(secret_len_bytes); k++) {
			seed((enum shape)s, secret_len_bytes[k]);
			if (s == EMPTY)
				break;
		}
	return 0;
}
