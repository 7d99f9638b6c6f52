#!/usr/bin/python3
"""soft0's wire format as Wireshark decodes it.

Runs tests/wire-traffic (SEND/RECV, RDMA WRITE, RDMA READ between two soft0
contexts on 127.0.0.1), captures it on lo with tshark (dumpcap), then decodes
the capture with tshark's iwarp_mpa / iwarp_ddp_rdmap dissectors and asserts:

- the MPA request and the MPA reply were seen;
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

Usage: wire-capture.py WIRE_TRAFFIC, or wire-capture.py --decode FILE to
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
        return check(tshark, sys.argv[2], None)
    if len(sys.argv) != 2:
        print("usage: wire-capture.py WIRE_TRAFFIC | --decode FILE", file=sys.stderr)
        return 2
    traffic_bin = sys.argv[1]
    if os.geteuid() != 0:
        skip("not root (capturing on lo needs it)")
    tshark = shutil.which("tshark")
    if not tshark:
        skip("tshark is not installed (apt-get install tshark)")

    tmp = tempfile.mkdtemp(prefix="rverbs-wire-")
    pcap = os.path.join(tmp, "soft0.pcapng")
    cap_err = open(os.path.join(tmp, "capture.err"), "w+")
    traffic = subprocess.Popen([traffic_bin], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
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
            if "Capturing on" in text and os.path.exists(pcap):
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
    return check(tshark, pcap, tmp)


def check(tshark, pcap, tmp):
    pdml = subprocess.run([tshark, "-r", pcap, "-T", "pdml"] + HEUR_ON + HEUR_OFF,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if pdml.returncode != 0:
        fail("tshark -r failed (%d): %s" % (pdml.returncode, pdml.stderr.strip()))
    root = ET.fromstring(pdml.stdout)

    frames = 0
    iwarp_frames = 0
    fpdus = 0
    crc_good = 0
    requests = replies = 0
    opcodes = {}
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
            elif name == "iwarp_mpa.rep":
                replies += 1
            elif name == "iwarp_mpa.fpdu":
                fpdus += 1
                has_mpa = True
            elif name == "iwarp_mpa.crc_check":
                if "Good" in show:
                    crc_good += 1
                else:
                    problems.append("frame %s: %s" % (num, show))
            elif name == "iwarp_mpa.crc":
                problems.append("frame %s: bad CRC: %s" % (num, show))
            elif name == "iwarp_rdma.opcode":
                op = show.split(":", 1)[-1].strip()
                opcodes[op] = opcodes.get(op, 0) + 1
            elif name in ("iwarp_mpa.bad_length", "iwarp_mpa.res.not_set0",
                          "iwarp_mpa.rev.not_set1", "iwarp_mpa.reject_bit_responder"):
                problems.append("frame %s: %s" % (num, show))
            elif name == "_ws.malformed":
                problems.append("frame %s: malformed: %s" % (num, show))
            elif name == "_ws.expert.severity" and f.get("show") in ("8388608",):
                problems.append("frame %s: expert error" % num)
        for p in pkt.iter("proto"):
            if p.get("name") == "_ws.malformed":
                problems.append("frame %s: malformed (%s)" % (num, p.get("showname")))
        if has_mpa:
            iwarp_frames += 1

    # Every FPDU has a DDP/RDMAP header and a CRC (this test's streams have CRC on).
    rdmap = sum(opcodes.values())
    print("frames captured: %d, frames with FPDUs: %d, FPDUs: %d, RDMAP headers: %d, "
          "CRCs checked good: %d, MPA requests: %d, MPA replies: %d"
          % (frames, iwarp_frames, fpdus, rdmap, crc_good, requests, replies))
    print("RDMAP opcodes: " + ", ".join("%s %d" % kv for kv in sorted(opcodes.items())))
    if requests < 1 or replies < 1:
        problems.append("MPA request/reply not seen (requests %d, replies %d)" % (requests, replies))
    if fpdus == 0:
        problems.append("no FPDU decoded")
    if rdmap != fpdus:
        problems.append("%d FPDUs but %d RDMAP headers" % (fpdus, rdmap))
    if crc_good != fpdus:
        problems.append("%d FPDUs but %d good CRCs" % (fpdus, crc_good))
    for op in ("Send", "Write", "Read Request", "Read Response"):
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
