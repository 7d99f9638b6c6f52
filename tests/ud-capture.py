#!/usr/bin/python3
"""soft0's UD datagrams as Wireshark decodes them, and their ICRCs.

Runs tests/ud-traffic (UD SENDs of 0 to 4096 bytes, every pad length, with and
without immediate data, replies through rv_ah_from_wc, between two soft0
contexts on 127.0.0.1), captures it on lo with tshark (dumpcap), then:

- decodes the capture with tshark's InfiniBand dissector on the contexts' UDP
  ports (`-d udp.port==N,infiniband`, as for RoCEv2 on a port other than
  4791; with the Mellanox EoIB payload heuristic off, since the payloads are
  arbitrary bytes) and asserts that every datagram decodes as BTH + DETH with opcode
  0x64 (UD SEND Only) or 0x65 (with immediate; then an ImmDt), the Q_Key the
  traffic uses, the ICRC field present, and no malformed packet or expert
  error;
- recomputes every ICRC itself from the captured bytes, as IBTA Annex A17 says
  (CRC-32 over 8 bytes of 0xFF, the IPv4 header with TOS, TTL and checksum as
  ones, the UDP header with the checksum as ones, the BTH with byte 4 as ones,
  and the rest up to the ICRC, sent least significant byte first), because
  tshark does not check it;
- counts the datagrams against what ud-traffic says it sent.

Usage: ud-capture.py UD_TRAFFIC, or ud-capture.py --decode FILE PORT... to
check an existing capture (pcap, not pcapng). Exit 77 (skip) when not root,
without tshark, or when capturing on lo fails. Prints the figures.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
import zlib

SKIP = 77
QKEY = 0x11111111
# The payloads are arbitrary bytes: the heuristic that looks for Mellanox
# EoIB inside an InfiniBand payload (tshark 4.0) claims a zero-length one and
# reports it malformed, so it is off (by its heuristic name); a payload is a payload.
PAYLOAD_HEURISTICS_OFF = ["--disable-heuristic", "mellanox_eoib"]


def skip(why):
    print("SKIP: " + why)
    sys.exit(SKIP)


def fail(why):
    print("FAIL: " + why)
    sys.exit(1)


def main():
    if len(sys.argv) >= 4 and sys.argv[1] == "--decode":
        tshark = shutil.which("tshark")
        if not tshark:
            skip("tshark is not installed (apt-get install tshark)")
        return check(tshark, sys.argv[2], [int(p) for p in sys.argv[3:]], None, None)
    if len(sys.argv) != 2:
        print("usage: ud-capture.py UD_TRAFFIC | --decode FILE PORT...", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        skip("not root (capturing on lo needs it)")
    tshark = shutil.which("tshark")
    if not tshark:
        skip("tshark is not installed (apt-get install tshark)")

    tmp = tempfile.mkdtemp(prefix="rverbs-ud-")
    pcap = os.path.join(tmp, "soft0-ud.pcap")
    cap_err = open(os.path.join(tmp, "capture.err"), "w+")
    traffic = subprocess.Popen([sys.argv[1]], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    cap = None
    try:
        line = traffic.stdout.readline().split()
        if len(line) != 3 or line[0] != "ports":
            fail("ud-traffic printed %r, expected 'ports A B'" % " ".join(line))
        ports = [int(line[1]), int(line[2])]
        bpf = "udp port %d or udp port %d" % tuple(ports)
        print("soft0 UDP ports %d %d; capture filter '%s'" % (ports[0], ports[1], bpf))
        # -F pcap: the checker below reads the classic format itself.
        cap = subprocess.Popen([tshark, "-i", "lo", "-f", bpf, "-F", "pcap", "-w", pcap, "-q"],
                               stdout=subprocess.DEVNULL, stderr=cap_err)
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
        time.sleep(0.3)

        out, _ = traffic.communicate("go\n", timeout=60)
        print(out.strip())
        if traffic.returncode != 0:
            fail("ud-traffic exited %d" % traffic.returncode)
        sent = int(out.split()[-1])
        time.sleep(0.5)
    finally:
        if traffic.poll() is None:
            traffic.kill()
            traffic.wait()
        if cap is not None and cap.poll() is None:
            cap.send_signal(2)
            try:
                cap.wait(timeout=20)
            except subprocess.TimeoutExpired:
                cap.kill()
                cap.wait()
    return check(tshark, pcap, ports, sent, tmp)


def read_pcap(path):
    """(frame number, bytes) of every record of a classic pcap file (Ethernet)."""
    data = open(path, "rb").read()
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        fail("%s is not a classic pcap file" % path)
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    if linktype != 1:
        fail("link type %d, expected Ethernet (lo)" % linktype)
    off, num = 24, 0
    while off + 16 <= len(data):
        incl = struct.unpack(endian + "I", data[off + 8:off + 12])[0]
        num += 1
        yield num, data[off + 16:off + 16 + incl]
        off += 16 + incl


def icrc_problem(frame):
    """None if the frame's ICRC is right, else why not. IPv4 over Ethernet."""
    if frame[12:14] != b"\x08\x00":
        return "not IPv4"
    ip = bytearray(frame[14:34])
    if ip[0] != 0x45 or ip[9] != 17:
        return "not IPv4 (IHL 5) + UDP"
    total = struct.unpack(">H", ip[2:4])[0]
    pkt = frame[14:14 + total]
    udp = bytearray(pkt[20:28])
    payload = pkt[28:]
    if len(payload) < 12 + 4:
        return "UDP payload of %d bytes" % len(payload)
    ip[1] = 0xff                   # TOS
    ip[8] = 0xff                   # TTL
    ip[10:12] = b"\xff\xff"        # header checksum
    udp[6:8] = b"\xff\xff"         # UDP checksum
    bth = bytearray(payload[:12])
    bth[4] = 0xff                  # FECN, BECN, reserved
    want = zlib.crc32(b"\xff" * 8 + bytes(ip) + bytes(udp) + bytes(bth) + payload[12:-4])
    got = struct.unpack("<I", payload[-4:])[0]
    if want != got:
        return "ICRC 0x%08x on the wire, 0x%08x computed" % (got, want)
    return None


def check(tshark, pcap, ports, sent, tmp):
    decode_as = list(PAYLOAD_HEURISTICS_OFF)
    for p in ports:
        decode_as += ["-d", "udp.port==%d,infiniband" % p]
    pdml = subprocess.run([tshark, "-r", pcap, "-T", "pdml"] + decode_as,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if pdml.returncode != 0:
        fail("tshark -r failed (%d): %s" % (pdml.returncode, pdml.stderr.strip()))
    root = ET.fromstring(pdml.stdout)

    problems = []
    decoded = 0
    opcodes = {}
    imm = 0
    frames = 0
    for pkt in root.iter("packet"):
        frames += 1
        num = "?"
        fields = {}
        protos = set()
        for p in pkt.iter("proto"):
            protos.add(p.get("name"))
        for f in pkt.iter("field"):
            name = f.get("name", "")
            if name == "frame.number":
                num = f.get("show")
            fields.setdefault(name, f.get("show"))
            if name == "_ws.expert.severity" and f.get("show") == "8388608":
                problems.append("frame %s: expert error" % num)
        if "_ws.malformed" in protos or "_ws.malformed" in fields:
            problems.append("frame %s: malformed" % num)
        if "infiniband" not in protos:
            problems.append("frame %s: not decoded as InfiniBand (%s)" % (num, sorted(protos)))
            continue
        op = int(fields.get("infiniband.bth.opcode") or -1)
        opcodes[op] = opcodes.get(op, 0) + 1
        if op not in (0x64, 0x65):
            problems.append("frame %s: BTH opcode %d, not UD SEND Only" % (num, op))
        if "infiniband.deth" not in fields:
            problems.append("frame %s: no DETH" % num)
        elif int(fields.get("infiniband.deth.q_key") or "0", 0) != QKEY:
            problems.append("frame %s: Q_Key %s" % (num, fields.get("infiniband.deth.q_key")))
        if op == 0x65:
            if "infiniband.immdt" in fields:
                imm += 1
            else:
                problems.append("frame %s: opcode 0x65 without ImmDt" % num)
        if "infiniband.invariant.crc" not in fields:
            problems.append("frame %s: no ICRC field" % num)
        if int(fields.get("infiniband.bth.tver") or "0") != 0:
            problems.append("frame %s: TVer %s" % (num, fields.get("infiniband.bth.tver")))
        decoded += 1

    checked = 0
    for num, frame in read_pcap(pcap):
        why = icrc_problem(frame)
        if why:
            problems.append("frame %d: %s" % (num, why))
        else:
            checked += 1
            # The checker itself must see a change of one payload bit, and
            # must not see one of the variant fields (TTL, BTH byte 4).
            if checked == 1:
                bad = bytearray(frame)
                bad[14 + 28 + 12] ^= 1
                if icrc_problem(bytes(bad)) is None:
                    problems.append("the ICRC check missed a flipped bit")
                ok = bytearray(frame)
                ok[14 + 8] ^= 0x3f
                ok[14 + 28 + 4] ^= 0xc0
                if icrc_problem(bytes(ok)) is not None:
                    problems.append("the ICRC check counted a variant field")

    print("datagrams captured: %d, decoded as BTH+DETH: %d (opcode 0x64: %d, 0x65 with ImmDt: %d), "
          "ICRCs recomputed and good: %d"
          % (frames, decoded, opcodes.get(0x64, 0), imm, checked))
    if decoded == 0:
        problems.append("no datagram decoded")
    if sent is not None and frames != sent:
        problems.append("ud-traffic sent %d datagrams, the capture has %d" % (sent, frames))
    if checked != frames:
        problems.append("%d frames but %d good ICRCs" % (frames, checked))
    if not opcodes.get(0x64) or not imm:
        problems.append("both opcodes must appear")
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
