/*
 * Writes the seed corpus of tests/fuzz/fuzz-roce-ud.c from the encoder: UD
 * SEND Only datagrams with and without immediate data, every pad length,
 * payloads of 0 to 4096 bytes, IPv4 and IPv6 addressing (the first byte of
 * each file is the fuzz target's selector; bit 7 clear: the ICRC in the file
 * is the real one), a few with the recompute bit set, and authenticated
 * datagrams (DETH mark and MAC trailer) sealed with the fuzz target's key.
 *
 * usage: gen-roce-corpus DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/soft/wire/roce.h"

static const char *dir;
/* The fuzz target's key (kept in step with it). */
static const uint8_t key[] = "fuzz-roce-ud key";

static void put(const char *name, const uint8_t *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* The fuzz target's addressing for selector sel (kept in step with it). */
static void addr_from(uint8_t sel, struct rv_roce_addr *a)
{
	memset(a, 0, sizeof(*a));
	a->family = (sel & 1) ? 6 : 4;
	if (a->family == 4) {
		a->src[0] = a->dst[0] = 127;
		a->src[3] = 1;
		a->dst[3] = (uint8_t)(1 + ((sel >> 1) & 3));
	} else {
		a->src[15] = a->dst[15] = 1;
	}
	a->sport = (uint16_t)(40000 + ((sel >> 3) & 7));
	a->dport = 4791;
	a->ip_frag = 0x4000;
}

int main(int argc, char **argv)
{
	static const uint32_t sizes[] = {0, 1, 2, 3, 4, 5, 17, 256, 1023, 4096};
	static uint8_t buf[1 + RV_ROCE_UD_OVERHEAD + 4096 + RV_ROCE_UD_AUTH_LEN];
	int k = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	dir = argv[1];
	for (int sel = 0; sel < 2; sel++) {
		for (int imm = 0; imm < 2; imm++) {
			for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
				struct rv_roce_ud h = {.opcode = imm ? RV_ROCE_UD_SEND_ONLY_IMM : RV_ROCE_UD_SEND_ONLY,
						       .solicited = s & 1, .pkey = 0xffff, .dest_qp = 0x12345 + (uint32_t)s,
						       .psn = (uint32_t)s * 977, .qkey = 0x11111111, .src_qp = 0x2222,
						       .imm = 0xabcd0000u + (uint32_t)s};
				struct rv_roce_addr a;
				char name[64];
				size_t hl, n;

				addr_from((uint8_t)sel, &a);
				buf[0] = (uint8_t)sel;
				hl = rv_roce_ud_encode_hdr(&h, sizes[s], buf + 1);
				for (uint32_t i = 0; i < sizes[s]; i++)
					buf[1 + hl + i] = (uint8_t)(i * 31 + 7);
				n = rv_roce_ud_finish(&a, buf + 1, hl + sizes[s]);
				snprintf(name, sizeof(name), "ud-%s-%s-%u", sel ? "v6" : "v4", imm ? "imm" : "plain",
					 sizes[s]);
				put(name, buf, 1 + n);
				if (s < 3) {
					/* The same with the recompute bit: mutations keep a valid ICRC. */
					buf[0] |= 0x80;
					snprintf(name, sizeof(name), "ud-fixicrc-%d", k++);
					put(name, buf, 1 + n);
				}
				if (s < 4 || sizes[s] == 4096) {
					/* Authenticated: marked, sealed, then finished. */
					h.deth_rsvd = RV_ROCE_UD_AUTH_MARK;
					buf[0] = (uint8_t)sel;
					hl = rv_roce_ud_encode_hdr(&h, sizes[s] + RV_ROCE_UD_AUTH_LEN, buf + 1);
					n = rv_roce_ud_auth_seal(key, sizeof(key) - 1, &a, buf + 1, hl + sizes[s],
								 0x0123456789abcdefu, s);
					n = rv_roce_ud_finish(&a, buf + 1, n);
					snprintf(name, sizeof(name), "ud-auth-%s-%s-%u", sel ? "v6" : "v4",
						 imm ? "imm" : "plain", sizes[s]);
					put(name, buf, 1 + n);
				}
			}
		}
	}
	return 0;
}
