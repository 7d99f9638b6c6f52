#!/usr/bin/python3
"""soft0's wire format as Wireshark decodes it.

Runs tests/wire-traffic (SEND/RECV, RDMA WRITE, RDMA READ between two soft0
contexts on 127.0.0.1), captures it on lo with tshark (dumpcap), then decodes
the capture with tshark's iwarp_mpa / iwarp_ddp_rdmap dissectors and asserts:

- the MPA request and the MPA reply were seen, both revision 2 (RFC 6581,
  enhanced connection setup) with the IRD/ORD words and the peer-to-peer RTR
  negotiation at the head of the private data (the initiator offers READ and
  WRITE RTR, the responder picks exactly one), no markers;
- every FPDU decodes as iWARP (MPA + DDP + RDMAP), no frame is malformed and
  no expert info of severity Error is raised;
- every FPDU's CRC checks good: tshark puts a good CRC in the field
  iwarp_mpa.crc_check with the text "(Good CRC32)" and a bad one in
  iwarp_mpa.crc with "(Bad CRC32)" (as text only: no expert info), so the
  test reads the field texts from PDML.

iwarp_mpa is a TCP heuristic dissector (enabled by default) that follows a
stream from its MPA request; no "decode as" is needed, but the test enables
it explicitly (iwarp_mpa_tcp). The RPC-over-RDMA and SMB Direct heuristics on top of
iwarp_ddp_rdmap are disabled: the SEND payloads are arbitrary bytes, and
RPC-over-RDMA's heuristic (tshark 4.0) claims a 1- or 7-byte payload and then
reports it as malformed.

With --no-crc the traffic runs with RVERBS_SOFT_CRC=0 on both sides: the C
bit must be clear in the request and the reply, and tshark (which follows the
C bits) must find FPDUs with no CRC field to check.

tshark 4.0 implements RFC 5044 only and flags revision 2 with the expert
note iwarp_mpa.rev.not_set1 ("Rev field is NOT set to one"); that note is
expected here and not counted as a problem. The traffic includes RFC 7306
messages: tshark 4.0 decodes Atomic Request/Response (0xa, 0xb: FetchAdd,
CmpSwap, request id, STag, offset, data and masks) and must see both; it does
not know Immediate Data (0x8, 0x9), which it lists as opcode "Unknown"
without flagging the frame (the DDP header and CRC are still checked).

Usage: wire-capture.py [--no-crc] WIRE_TRAFFIC, or wire-capture.py --decode FILE to
check an existing capture (for example one with a byte flipped, which must
fail on its CRC). Exit 77 (skip) when not root, without
tshark, or when capturing on lo fails. Prints the figures (frames, FPDUs,
CRCs checked).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

SKIP = 77
HEUR_ON = ["--enable-heuristic", "iwarp_mpa_tcp"]
HEUR_OFF = ["--disable-heuristic", "rpcrdma_iwarp", "--disable-heuristic", "smb_direct_iwarp"]


def skip(why):
    print("SKIP: " + why)
    sys.exit(SKIP)


def fail(why):
    print("FAIL: " + why)
    sys.exit(1)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--decode":
        tshark = shutil.which("tshark")
        if not tshark:
            skip("tshark is not installed (apt-get install tshark)")
        return check(tshark, sys.argv[2], None, True)
    crc = True
    args = sys.argv[1:]
    if args and args[0] == "--no-crc":
        crc = False
        args = args[1:]
    if len(args) != 1:
        print("usage: wire-capture.py [--no-crc] WIRE_TRAFFIC | --decode FILE", file=sys.stderr)
        return 2
    traffic_bin = args[0]
    if os.geteuid() != 0:
        skip("not root (capturing on lo needs it)")
    tshark = shutil.which("tshark")
    if not tshark:
        skip("tshark is not installed (apt-get install tshark)")

    tmp = tempfile.mkdtemp(prefix="rverbs-wire-")
    pcap = os.path.join(tmp, "soft0.pcapng")
    cap_err = open(os.path.join(tmp, "capture.err"), "w+")
    env = dict(os.environ)
    if not crc:
        env["RVERBS_SOFT_CRC"] = "0"
    traffic = subprocess.Popen([traffic_bin], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True, env=env)
    cap = None
    try:
        line = traffic.stdout.readline().split()
        if len(line) != 3 or line[0] != "ports":
            fail("wire-traffic printed %r, expected 'ports A B'" % " ".join(line))
        port_a, port_b = int(line[1]), int(line[2])
        bpf = "tcp port %d or tcp port %d" % (port_a, port_b)
        print("soft0 listen ports %d %d; capture filter '%s'" % (port_a, port_b, bpf))

        cap = subprocess.Popen([tshark, "-i", "lo", "-f", bpf, "-w", pcap, "-q"],
                               stdout=subprocess.DEVNULL, stderr=cap_err)
        # Capturing once dumpcap says so (and has created the file).
        deadline = time.monotonic() + 20
        while True:
            cap_err.seek(0)
            text = cap_err.read()
            # dumpcap says "Capturing on 'lo'"; some runs only log "Capture started".
            if ("Capturing on" in text or "Capture started" in text) and os.path.exists(pcap):
                break
            if cap.poll() is not None or time.monotonic() > deadline:
                traffic.kill()
                traffic.wait()
                skip("capturing on lo failed: " + text.strip().replace("\n", " | "))
            time.sleep(0.05)
        time.sleep(0.3)  # the filter is attached before "Capturing on"; margin anyway

        out, _ = traffic.communicate("go\n", timeout=60)
        print(out.strip())
        if traffic.returncode != 0:
            fail("wire-traffic exited %d" % traffic.returncode)
        time.sleep(0.5)  # let the last segments (FIN) reach the capture
    finally:
        if traffic.poll() is None:
            traffic.kill()
            traffic.wait()
        if cap is not None and cap.poll() is None:
            cap.send_signal(2)  # SIGINT: dumpcap flushes and closes the file
            try:
                cap.wait(timeout=20)
            except subprocess.TimeoutExpired:
                cap.kill()
                cap.wait()
    return check(tshark, pcap, tmp, crc)


def mpa_v2(pd_hex, reply):
    """Problems with the RFC 6581 words at the head of the private data."""
    if len(pd_hex) < 8:
        return ["private data too short for the RFC 6581 IRD/ORD words"]
    ird, ord_ = int(pd_hex[0:4], 16), int(pd_hex[4:8], 16)
    p2p, send_rtr = ird & 0x8000, ird & 0x4000
    write_rtr, read_rtr = ord_ & 0x8000, ord_ & 0x4000
    out = []
    if not p2p:
        out.append("peer-to-peer bit not set")
    if send_rtr:
        out.append("SEND RTR offered/chosen (soft0 uses READ or WRITE)")
    if reply and bool(write_rtr) == bool(read_rtr):
        out.append("the reply must choose exactly one RTR type (IRD word 0x%04x, ORD word 0x%04x)"
                   % (ird, ord_))
    if not reply and not (write_rtr and read_rtr):
        out.append("the request should offer READ and WRITE RTR (ORD word 0x%04x)" % ord_)
    if pd_hex[8:16] != "52565332":  # "RVS2"
        out.append("rverbs private data magic RVS2 missing")
    return out


def check(tshark, pcap, tmp, crc):
    pdml = subprocess.run([tshark, "-r", pcap, "-T", "pdml"] + HEUR_ON + HEUR_OFF,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if pdml.returncode != 0:
        fail("tshark -r failed (%d): %s" % (pdml.returncode, pdml.stderr.strip()))
    root = ET.fromstring(pdml.stdout)

    frames = 0
    iwarp_frames = 0
    fpdus = 0
    crc_good = 0
    crc_zero = 0
    pd_checked = 0
    requests = replies = 0
    revisions = []
    opcodes = {}
    in_req = None
    problems = []
    for pkt in root.iter("packet"):
        frames += 1
        num = "?"
        has_mpa = False
        for f in pkt.iter("field"):
            name = f.get("name", "")
            show = f.get("showname", "") or f.get("show", "")
            if name == "frame.number":
                num = f.get("show")
            elif name == "iwarp_mpa.req":
                requests += 1
                in_req = True
            elif name == "iwarp_mpa.rep":
                replies += 1
                in_req = False
            elif name == "iwarp_mpa.rev":
                revisions.append(int(f.get("show"), 0))
            elif name == "iwarp_mpa.crc_flag" and in_req is not None:
                if (f.get("show") in ("1", "True")) != crc:
                    problems.append("frame %s: MPA %s C bit %s, expected %s"
                                    % (num, "request" if in_req else "reply", f.get("show"), crc))
            elif name == "iwarp_mpa.marker_flag" and f.get("show") in ("1", "True"):
                problems.append("frame %s: MPA markers requested" % num)
            elif name == "iwarp_mpa.privatedata" and in_req is not None:
                pd_checked += 1
                for p in mpa_v2(f.get("value", ""), not in_req):
                    problems.append("frame %s: MPA %s: %s" % (num, "request" if in_req else "reply", p))
            elif name == "iwarp_mpa.fpdu":
                fpdus += 1
                has_mpa = True
            elif name == "iwarp_mpa.crc_check":
                if "Good" in show:
                    crc_good += 1
                else:
                    problems.append("frame %s: %s" % (num, show))
            elif name == "iwarp_mpa.crc":
                # CRC off: the field is there, unchecked, and must be zero (RFC 5044 §4).
                if not crc and int(f.get("show"), 0) == 0:
                    crc_zero += 1
                else:
                    problems.append("frame %s: bad CRC: %s" % (num, show))
            elif name == "iwarp_rdma.opcode":
                op = show.split(":", 1)[-1].strip()
                opcodes[op] = opcodes.get(op, 0) + 1
            elif name in ("iwarp_mpa.bad_length", "iwarp_mpa.res.not_set0",
                          "iwarp_mpa.reject_bit_responder"):
                problems.append("frame %s: %s" % (num, show))
            elif name == "_ws.malformed":
                problems.append("frame %s: malformed: %s" % (num, show))
            elif name == "_ws.expert.severity" and f.get("show") in ("8388608",) \
                    and "not_set1" not in ET.tostring(pkt, encoding="unicode"):
                problems.append("frame %s: expert error" % num)
        for p in pkt.iter("proto"):
            if p.get("name") == "_ws.malformed":
                problems.append("frame %s: malformed (%s)" % (num, p.get("showname")))
        if has_mpa:
            iwarp_frames += 1

    # Every FPDU has a DDP/RDMAP header, and a CRC when the stream has CRC on.
    rdmap = sum(opcodes.values())
    print("frames captured: %d, frames with FPDUs: %d, FPDUs: %d, RDMAP headers: %d, "
          "CRCs checked good: %d, zero CRC fields: %d, MPA requests: %d, MPA replies: %d, MPA revisions: %s, CRC %s"
          % (frames, iwarp_frames, fpdus, rdmap, crc_good, crc_zero, requests, replies,
             sorted(set(revisions)), "on" if crc else "off"))
    print("RDMAP opcodes: " + ", ".join("%s %d" % kv for kv in sorted(opcodes.items())))
    if requests < 1 or replies < 1:
        problems.append("MPA request/reply not seen (requests %d, replies %d)" % (requests, replies))
    if fpdus == 0:
        problems.append("no FPDU decoded")
    if rdmap != fpdus:
        problems.append("%d FPDUs but %d RDMAP headers" % (fpdus, rdmap))
    if pd_checked < 2:
        problems.append("the private data of the MPA request and reply was not decoded (%d)" % pd_checked)
    if revisions and set(revisions) != {2}:
        problems.append("MPA revisions %s, expected 2 (RFC 6581)" % sorted(set(revisions)))
    if crc and crc_good != fpdus:
        problems.append("%d FPDUs but %d good CRCs" % (fpdus, crc_good))
    if not crc and crc_good:
        problems.append("CRC negotiated off, but tshark checked %d CRCs" % crc_good)
    if not crc and crc_zero != fpdus:
        problems.append("CRC off: %d FPDUs but %d zero CRC fields" % (fpdus, crc_zero))
    # RFC 7306: tshark 4.0 names the atomics; Immediate Data (0x8) shows as "Unknown".
    for op in ("Send", "Write", "Read Request", "Read Response", "Atomic Request", "Atomic Response"):
        if not any(k.startswith(op) for k in opcodes):
            problems.append("no %s decoded" % op)
    if problems:
        for p in problems[:50]:
            print("PROBLEM: " + p)
        print("capture kept in " + pcap)
        fail("%d problems" % len(problems))
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
