#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (tests/fuzz/corpus/<target>/)
from the project's own input files and a few hand-written ones (corpus/asm/all.s is
kept by hand). Run from the
source root; the output is committed, so it only needs running again when the
readers learn new syntax: python3 tests/fuzz/make_seeds.py build/bin/fabricvp"""
import glob
import os
import random
import struct
import subprocess
import sys
import tempfile

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
corpus = os.path.join(root, "tests", "fuzz", "corpus")
fabricvp = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "bin", "fabricvp")


def write(target, name, data):
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def read(path):
    with open(os.path.join(root, path), "rb") as f:
        return f.read()


# platform: (scripts/fuzz.sh also seeds from platforms/) some with -p overrides after a NUL
write("platform", "overrides.yaml",
      read("platforms/groq-node.yaml") + b"\0sys.node0.link*.lane_gbps=25.78125\nsys.node*.tsp*.clock_mhz=900\n"
      b"trace.window=0:10us\n")
write("platform", "units.yaml", "a: 64MiB\nb: 1.5GiB\nc: 2.5ms\nd: 0x10\ne: -3\nf: [1, 2, 3]\ng: true\n"
      "h: {i: {j: 1e-3}}\n'*': 1\nk.*.l: 7\n")
write("platform", "anchors.yaml", "base: &b {x: 1, y: 2}\nn0: *b\nn1: *b\n")

# asm: corpus/asm/all.s (every mnemonic and directive) is hand-written; scripts/fuzz.sh also seeds from
# docs/examples/.

# astra: first byte picks the reader (0 text workload, 1 YAML workload, 2 system
# text, 3 system JSON, 4 network YAML, 5 network JSON)
with tempfile.TemporaryDirectory() as tmp:
    for p in sorted(glob.glob(os.path.join(root, "sw", "workloads", "*.yaml"))):
        name = os.path.splitext(os.path.basename(p))[0]
        write("astra", name + "-yaml", b"\1" + read(p))
        out = os.path.join(tmp, name + ".txt")
        subprocess.run([fabricvp, "convert", "astra", "--workload", p, "-o", out], check=True,
                       stdout=subprocess.DEVNULL)
        write("astra", name + "-text", b"\0" + open(out, "rb").read())
write("astra", "dlrm-text", b"\0HYBRID_DLRM 1\n2\na -1 1 ALLTOALL 8 1 ALLTOALL 8 1 NONE 0 0\n"
      b"b -1 5 NONE 0 5 NONE 0 5 ALLREDUCE 64 10\n")
write("astra", "transformer-text", b"\0HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 4 checkpoints: 1 0 "
      b"checkpoint_initiates: 1 1\n1\nl0 -1 10 ALLGATHER 1024 10 REDUCESCATTER 1024 10 ALLREDUCE 4096 5\n")
write("astra", "custom-text", b"\0HYBRID_CUSTOMIZED\n2\na -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 0 DATA\n"
      b"b -1 1 ALLTOALL 8 1 NONE 0 1 NONE 0 0 MODEL\n")
write("astra", "system-text", b"\2scheduling-policy: LIFO\nendpoint-delay: 10\nactive-chunks-per-dimension: 1\n"
      b"preferred-dataset-splits: 4\nall-reduce-implementation: ring_doubleBinaryTree\n"
      b"all-gather-implementation: ring_halvingDoubling\nreduce-scatter-implementation: direct_ring\n"
      b"all-to-all-implementation: direct\ncollective-optimization: localBWAware\nlocal-mem-bw: 50\n"
      b"boost-mode: 1\n")
write("astra", "system-json", b'\3{"scheduling-policy": "FIFO", "endpoint-delay": 10, "active-chunks-per-dimension": 2, '
      b'"preferred-dataset-splits": 16, "all-reduce-implementation": ["ring", "ring"], '
      b'"collective-optimization": "baseline", "local-mem-bw": 1600}')
write("astra", "network-yaml", b"\4topology: [Ring, FullyConnected, Switch]\nnpus_count: [4, 2, 2]\n"
      b"bandwidth: [50.0, 25.0, 12.5]\nlatency: [500.0, 500.0, 1000.0]\n")
write("astra", "network-json", b'\5{"topology-name": "Hierarchical", "topologies-per-dim": ["Ring", "Ring"], '
      b'"units-count": [4, 4], "links-count": [2, 2], "link-bandwidth": [200, 25], "link-latency": [500, 500]}')

# pcap: raw IPv4 (228, 101) and Ethernet (1), both byte orders, us and ns stamps


def ipv4_udp(i, payload):
    total = 28 + len(payload)
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, total, i, 0, 64, 17, 0, bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    udp = struct.pack(">HHHH", 5000, 6000, 8 + len(payload), 0)
    return ip + udp + payload


def pcap(order, magic, linktype, packets):
    out = struct.pack(order + "IHHiIII", magic, 2, 4, 0, 0, 65535, linktype)
    for i, p in enumerate(packets):
        out += struct.pack(order + "IIII", i, 1000 * i, len(p), len(p)) + p
    return out


rng = random.Random(1)
pk = [ipv4_udp(i, bytes(rng.randrange(256) for _ in range(4 * (i + 1)))) for i in range(4)]
write("pcap", "ipv4-ns-le.pcap", pcap("<", 0xA1B23C4D, 228, pk))
write("pcap", "ipv4-us-be.pcap", pcap(">", 0xA1B2C3D4, 101, pk))
write("pcap", "ethernet.pcap", pcap("<", 0xA1B2C3D4, 1, [b"\xff" * 12 + b"\x08\x00" + p for p in pk]))

# fec: arbitrary words (mode bit 1 clear) and corrupted codewords (set), both codes
for m in range(4):
    write("fec", "mode%d" % m, bytes([m]) + bytes(rng.randrange(256) for _ in range(1200)))
    write("fec", "mode%d-short" % m, bytes([m, 7, 30, 1, 2, 3]))

# sweep: (scripts/fuzz.sh also seeds from sweeps/, read as if there) the forms docs/sweeps.md shows
write("sweep", "ranges.yaml", """sweep:
  name: r
  platform: ../platforms/groq-node.yaml
  options: [--workload, allreduce, --dtype, fp32]
  axes:
    - key: --bytes
      range: {from: 1024, to: 65536, factor: 4}
    - zip:
        - {key: sys.node0.link*.lane_gbps, values: [25, 50]}
        - {key: sys.node0.tsp*.clock_mhz, range: {from: 800, to: 900, step: 100}}
  repetitions: 2
  record: [workload.busbw_GBps, workload.time_ps]
""")

# mtx: the forms the Matrix Market reader takes (Cholesky's --matrix)
write("mtx", "coordinate-symmetric.mtx", """%%MatrixMarket matrix coordinate real symmetric
% a comment
3 3 4
1 1 4.5
3 1 -1e-2
2 2 3
3 3 0.1
""")
write("mtx", "array-general.mtx", "%%MatrixMarket matrix array integer general\r\n2 3\r\n1\r\n2\r\n3\r\n4\r\n5\r\n6\r\n")
write("mtx", "array-symmetric.mtx", "%%MatrixMarket matrix array real symmetric\n3 3\n1\n2.5E+1\n3\n4\n5\n6\n")
write("mtx", "coordinate-general.mtx", "%%MatrixMarket matrix coordinate double general\n2 2 3\n1 1 1\n2 1 -2\n\n1 2 7e-3\n")
