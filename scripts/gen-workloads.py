#!/usr/bin/env python3
"""Generate the training workloads sw/workloads/{resnet50,gnmt,dlrm,gpt}.yaml.

Each file is a fabricvp YAML workload (sw/training/workload.cpp parses it;
ASTRA-sim 1.0 conventions): per layer the forward (fwd), input-gradient (ig)
and weight-gradient (wg) compute time of ONE NPU for its share of the batch,
the collective after each pass with its size in bytes per NPU, and the update
time. The layer shapes are the models' published ones (sw/workloads/README.md
names the sources); only the times come from the roofline below.

Roofline (per layer and pass, one NPU):

    time_ns = max(flops / (tflops * 1e12 * efficiency),
                  bytes_moved / (mem_GBps * 1e9)) * 1e9

rounded to the nearest integer and at least 1 when the pass has any work
(0 when it has none), with

    bytes_moved = (inputs + weights + outputs) * bytes_per_elem

counted in elements of the layer as one fused kernel (batch-norm, ReLU, GeLU,
residual adds, softmax, pooling are folded into the layer around them; no
intermediate goes to memory). The same element count is used for the three
passes: ig reads the output gradient and the weights and writes the input
gradient, wg reads the input and the output gradient and writes the weight
gradient. Two refinements, both still "inputs + weights + outputs":
  - an LSTM reads its recurrent weights once per time step in fwd and ig
    (a step's weights do not stay on chip), once in wg (one GEMM over time);
  - an embedding's "weights" are the rows it touches (batch x lookups), not
    the whole table.

FLOPs: 2 per multiply-accumulate. A matmul with weights costs F in fwd, F in
ig (dX = dY W^T) and F in wg (dW = X^T dY); a matmul of two activations
(attention scores, attention x values, DLRM's dot interaction) costs F in fwd
and 2F in ig (gradients of both operands), nothing in wg. The first layer of a
network has no ig (nothing needs the gradient of the input data).

Defaults: a V100-class NPU, 125 TFLOPS fp16 tensor-core peak (NVIDIA Tesla
V100 SXM2 datasheet) at 50 % achievable efficiency (--efficiency), 900 GB/s
HBM2 used as is, fp16 (2 bytes per element) activations, weights, gradients
and collectives.

update_ns = weights_per_NPU * bytes_per_elem * 3 / (mem_GBps * 1e9) * 1e9
(read the weights and the gradient, write the weights; an embedding updates
only the rows it touched), rounded to the nearest integer, >= 0.

Collectives (bytes per NPU):
  - data parallel: wg ALLREDUCE of the layer's weights x bytes_per_elem;
  - DLRM (HYBRID_DLRM): layer 0 holds the model-parallel embedding tables,
    fwd and ig ALLTOALL of batch x tables x dim x bytes_per_elem, no wg
    collective; the MLPs are data parallel (wg ALLREDUCE);
  - GPT (HYBRID_TRANSFORMER, Megatron tensor parallelism of degree
    model_parallel_npu_group): fwd ALLREDUCE of batch x seq x hidden x
    bytes_per_elem after attention and after the MLP, ig ALLREDUCE of the same
    size in backward, wg ALLREDUCE of the NPU's weight shard (data parallel
    across the groups); compute = FLOPs / model-parallel degree.

Usage:
    scripts/gen-workloads.py                 # write sw/workloads/*.yaml, then check them
    scripts/gen-workloads.py --check         # check the files on disk (schema, counts,
                                             # public numbers) and that they are up to date
    scripts/gen-workloads.py --out DIR --tflops 312 --mem-GBps 2039   # another NPU

The output is deterministic: the same options give byte-identical files.
Standard library only (PyYAML is used for the check when it is installed).
"""

import argparse
import math
import os
import re
import sys

SCRIPT = "scripts/gen-workloads.py"
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PARALLELISMS = (
    "DATA", "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "HYBRID_CUSTOMIZED", "MICRO", "HYBRID_DLRM",
    "HYBRID_DLRM_ENHANCED", "HYBRID_TRANSFORMER", "HYBRID_TRANSFORMER_FWD_IN_BCKWD", "DISTRIBUTED_INFERENCE")
COMMS = ("NONE", "ALLREDUCE", "ALLTOALL", "ALLGATHER", "REDUCESCATTER")

# Criteo Terabyte: rows of the 26 categorical features after hashing to at most
# 10M rows (facebookresearch/dlrm with --max-ind-range=10000000), ascending.
CRITEO_TB_ROWS = ("3-4-10-14-36-61-101-122-970-1442-2208-7112-7378-11156-12420-17217-20134-36084-313829-"
                  "415421-1333352-7267859-9758201-9946608-9980333-9994222")


# --------------------------------------------------------------------------- roofline


class Roofline:
    def __init__(self, tflops, efficiency, mem_gbps, bpe):
        self.tflops, self.efficiency, self.mem_gbps, self.bpe = tflops, efficiency, mem_gbps, bpe

    def ns(self, flops, elems):
        """Compute time of a pass: flops, elements moved (inputs + weights + outputs)."""
        if flops == 0 and elems == 0:
            return 0
        t = max(flops / (self.tflops * 1e12 * self.efficiency), elems * self.bpe / (self.mem_gbps * 1e9)) * 1e9
        return max(1, int(math.floor(t + 0.5)))

    def update_ns(self, weights):
        return int(math.floor(weights * self.bpe * 3 / (self.mem_gbps * 1e9) * 1e9 + 0.5))

    def describe(self):
        return (f"{fmt_num(self.tflops)} TFLOPS x {fmt_num(self.efficiency)} efficiency, "
                f"{fmt_num(self.mem_gbps)} GB/s, {self.bpe} bytes per element")


def fmt_num(x):
    """A float option for a comment: 125.0 -> '125', 0.5 -> '0.5'."""
    return f"{x:g}"


def mib(elems_bytes):
    return f"{elems_bytes / 1e6:.2f} MB"


class Pass:
    def __init__(self, flops=0, elems=0, comm="NONE", nbytes=0):
        self.flops, self.elems, self.comm, self.nbytes = flops, elems, comm, nbytes


class Layer:
    """A workload layer. params: the model's parameters of the layer (statistics);
    update: parameters this NPU updates (update_ns); shape: the comment."""

    def __init__(self, name, shape, params, fwd, ig, wg, update):
        self.name, self.shape, self.params = name, shape, params
        self.fwd, self.ig, self.wg, self.update = fwd, ig, wg, update


class Model:
    def __init__(self, key, title, description, notes, parallelism, header, layers, extra=(), stats=None):
        self.key, self.title, self.description, self.notes = key, title, description, notes
        self.parallelism, self.header, self.layers, self.extra = parallelism, header, layers, list(extra)
        self.stats = stats or {}


# --------------------------------------------------------------------------- ResNet-50


def resnet50(a, bpe):
    """He et al. 2016, Table 1 (50-layer column): conv1 7x7/2 64; 3x3/2 max pool; conv2_x..conv5_x
    bottleneck blocks [1x1 m, 3x3 m, 1x1 4m] x {3, 4, 6, 3} with m = 64, 128, 256, 512; projection
    shortcuts (1x1) where the shape changes; global average pool; fc 1000."""
    B = a.resnet_batch
    layers = []

    def conv(name, k, cin, cout, hin, stride, first=False):
        hout = (hin + stride - 1) // stride  # 'same' padding
        weights = k * k * cin * cout
        params = weights + 2 * cout  # + the folded batch-norm's scale and shift
        flops = 2 * k * k * cin * cout * hout * hout * B
        elems = B * cin * hin * hin + params + B * cout * hout * hout
        shape = (f"{k}x{k}/{stride} {cin}->{cout}, {hin}x{hin} -> {hout}x{hout}; params {params:,}; "
                 f"fwd {flops / 1e9:.2f} GFLOP, moves {mib(elems * bpe)}")
        layers.append(Layer(name, shape, params, Pass(flops, elems), Pass(0 if first else flops, 0 if first else elems),
                            Pass(flops, elems, "ALLREDUCE", params * bpe), params))
        return hout

    h = conv("conv1", 7, 3, 64, 224, 2, first=True)
    h = (h + 1) // 2  # 3x3/2 max pool: 112 -> 56
    cin = 64
    for stage, (m, blocks) in enumerate(((64, 3), (128, 4), (256, 6), (512, 3)), start=2):
        for b in range(1, blocks + 1):
            stride = 2 if (b == 1 and stage > 2) else 1
            # v1.5 (torchvision, MLPerf) strides the 3x3 conv; v1 (the paper) the first 1x1.
            s1, s3 = (1, stride) if a.resnet_variant == "v1.5" else (stride, 1)
            hin = h
            h1 = conv(f"conv{stage}_{b}a", 1, cin, m, hin, s1)
            h2 = conv(f"conv{stage}_{b}b", 3, m, m, h1, s3)
            h3 = conv(f"conv{stage}_{b}c", 1, m, 4 * m, h2, 1)
            if b == 1:
                conv(f"conv{stage}_{b}proj", 1, cin, 4 * m, hin, stride)
            h, cin = h3, 4 * m
    # Global average pool (7x7 -> 1x1), then fc 2048 -> 1000.
    params = 2048 * 1000 + 1000
    flops = 2 * 2048 * 1000 * B
    elems = B * 2048 * h * h + params + B * 1000
    layers.append(Layer("fc", f"avgpool {h}x{h} + fc 2048->1000; params {params:,}; fwd {flops / 1e9:.3f} GFLOP",
                        params, Pass(flops, elems), Pass(flops, elems), Pass(flops, elems, "ALLREDUCE", params * bpe),
                        params))
    macs_per_image = sum(l.fwd.flops for l in layers) / 2 / B
    return Model(
        "resnet50", "ResNet-50",
        f"ResNet-50 {a.resnet_variant} training, data parallel, {B} images of 224x224 per NPU",
        f"He et al. 2016 Table 1 shapes ({a.resnet_variant}: stride 2 in the "
        f"{'3x3' if a.resnet_variant == 'v1.5' else 'first 1x1'} conv of conv3_1, conv4_1, conv5_1); "
        "53 conv (49 + 4 projection shortcuts, batch-norm folded) + 1 fc; max/avg pool folded; "
        "wg ALLREDUCE of each layer's weights",
        "DATA",
        [f"ResNet-50 {a.resnet_variant} (He et al. 2016, Table 1), 224x224x3 input, {B} images per NPU.",
         "Each conv: batch-norm folded (its 2 x Cout scale/shift counted as parameters), ReLU fused.",
         "Projection shortcuts (1x1, stride 2 from conv3) are layers of their own (conv<s>_1proj).",
         f"Forward: {macs_per_image / 1e9:.2f} GMAC = {2 * macs_per_image / 1e9:.2f} GFLOP per image."],
        layers, stats={"macs_per_image": macs_per_image})


# --------------------------------------------------------------------------- GNMT


def gnmt(a, bpe):
    """Wu et al. 2016 (GNMT): 8 encoder LSTM layers (the first bidirectional, the others
    unidirectional, residual connections from the third), 8 decoder LSTM layers, 1024 units,
    additive attention from the bottom decoder layer fed to the decoder layers above it,
    a shared 32k wordpiece vocabulary (separate source and target embeddings), softmax."""
    B, S, H, V = a.gnmt_batch, a.gnmt_seq, a.gnmt_hidden, a.gnmt_vocab
    T = S  # target length = source length
    layers = []

    def embed(name):
        params = V * H
        rows = B * S  # one lookup per token
        elems = rows * H + rows * H  # read the rows, write the activations
        shape = f"embedding {V}x{H}, {B}x{S} tokens; params {params:,}"
        layers.append(Layer(name, shape, params, Pass(0, elems), Pass(),
                            Pass(0, elems + rows * H, "ALLREDUCE", params * bpe), params))

    def lstm(name, inp, directions=1):
        w = 4 * H * (inp + H)  # input and recurrent gate weights
        params = directions * (w + 8 * H)  # + cuDNN's two bias vectors
        flops = directions * 2 * B * S * 4 * H * (inp + H)
        recurrent = directions * 4 * H * H
        io = B * S * inp + B * S * H * directions
        elems_step = io + params + (S - 1) * recurrent  # fwd, ig: recurrent weights read per step
        elems_once = io + params
        d = "bidirectional " if directions == 2 else ""
        shape = (f"{d}LSTM {inp}->{H}{' x2' if directions == 2 else ''}, {S} steps; params {params:,}; "
                 f"fwd {flops / 1e9:.2f} GFLOP")
        layers.append(Layer(name, shape, params, Pass(flops, elems_step), Pass(flops, elems_step),
                            Pass(flops, elems_once, "ALLREDUCE", params * bpe), params))

    embed("enc_embed")
    lstm("enc1_bidir", H, 2)
    lstm("enc2", 2 * H)
    for i in range(3, 9):
        lstm(f"enc{i}", H)
    embed("dec_embed")
    lstm("dec1", H)
    # Additive (Bahdanau) attention: keys W_k h_s, queries W_q d_t, scores v . tanh(q + k), context.
    params = 2 * H * H + 2 * H
    proj = 2 * B * H * H * (S + T)
    pair = B * T * S * H  # per (target, source) pair: add, tanh, dot with v; context multiply-add
    elems = B * S * H + B * T * H + params + B * T * H
    layers.append(Layer("attention", f"additive attention {H}, {T}x{S} pairs; params {params:,}; "
                        f"fwd {(proj + 5 * pair) / 1e9:.2f} GFLOP", params,
                        Pass(proj + 5 * pair, elems), Pass(proj + 10 * pair, elems),
                        Pass(proj + pair, elems, "ALLREDUCE", params * bpe), params))
    for i in range(2, 9):
        lstm(f"dec{i}", 2 * H)  # input: the layer below and the attention context
    params = H * V + V
    flops = 2 * B * T * H * V
    elems = B * T * H + params + B * T * V
    layers.append(Layer("softmax", f"projection {H}->{V} + softmax, {B}x{T} tokens; params {params:,}; "
                        f"fwd {flops / 1e9:.2f} GFLOP", params, Pass(flops, elems), Pass(flops, elems),
                        Pass(flops, elems, "ALLREDUCE", params * bpe), params))
    return Model(
        "gnmt", "GNMT",
        f"GNMT training (8+8 LSTM layers, {H} units, {V} vocab), data parallel, {B} sentences x {S} tokens per NPU",
        "Wu et al. 2016 shapes: bidirectional first encoder layer (2x1024 out), decoder layers 2-8 take the "
        "attention context (2048 in); embeddings and softmax are dense layers with a wg ALLREDUCE of the "
        "whole table",
        "DATA",
        [f"GNMT (Wu et al. 2016): 8 encoder + 8 decoder LSTM layers, {H} units, additive attention,",
         f"{V}-wordpiece vocabulary; {B} sentence pairs per NPU, {S} tokens source and target.",
         "LSTM: params 4H(in+H) + 8H; fwd and ig read the recurrent weights once per time step."],
        layers)


# --------------------------------------------------------------------------- DLRM


def dlrm(a, bpe):
    """Naumov et al. 2019 (DLRM), Criteo Terabyte configuration of facebookresearch/dlrm
    (bench/dlrm_s_criteo_terabyte.sh): 13 dense features, 26 embedding tables of dimension 64,
    bottom MLP 13-512-256-64, dot interaction of the 27 vectors, top MLP 512-512-256-1."""
    B, D = a.dlrm_batch, a.dlrm_dim
    rows = [int(x) for x in a.dlrm_rows.split("-")]
    bot = [int(x) for x in a.dlrm_bot.split("-")]
    top = [int(x) for x in a.dlrm_top.split("-")]
    if bot[-1] != D:
        sys.exit(f"gen-workloads: the bottom MLP must end in the embedding dimension {D} (--dlrm-bot {a.dlrm_bot})")
    if top[-1] != 1:
        sys.exit(f"gen-workloads: the top MLP must end in 1 (--dlrm-top {a.dlrm_top})")
    T = len(rows)
    layers = []
    # Layer 0: the tables, model parallel. Each NPU looks up its tables for the whole global batch:
    # B x N samples x T/N tables = B x T rows of D, whatever N; the all-to-all exchanges them.
    emb_params = sum(rows) * D
    touched = B * T * D
    a2a = B * T * D * bpe
    layers.append(Layer(
        "embeddings", f"{T} tables x {D} (rows {sum(rows):,}), {B} x {T} lookups per NPU; "
        f"params {emb_params:,} (model parallel); all-to-all {a2a:,} B", emb_params,
        Pass(0, 2 * touched, "ALLTOALL", a2a), Pass(0, 0, "ALLTOALL", a2a),
        Pass(0, 3 * touched), touched))

    def fc(name, cin, cout, first=False):
        params = cin * cout + cout
        flops = 2 * B * cin * cout
        elems = B * cin + params + B * cout
        layers.append(Layer(name, f"fc {cin}->{cout}; params {params:,}; fwd {flops / 1e6:.1f} MFLOP", params,
                            Pass(flops, elems), Pass(0, 0) if first else Pass(flops, elems),
                            Pass(flops, elems, "ALLREDUCE", params * bpe), params))

    for i in range(len(bot) - 1):
        fc(f"bot_fc{i + 1}", bot[i], bot[i + 1], first=(i == 0))
    last_bottom = len(layers) - 1
    # Dot interaction: pairwise dot products of the T embeddings and the bottom MLP output.
    n = T + 1
    out = n * (n - 1) // 2 + D
    flops = 2 * B * n * n * D
    elems = B * n * D + B * out
    layers.append(Layer("interaction", f"dot interaction of {n} x {D} -> {n * (n - 1) // 2} + {D} = {out}; no params",
                        0, Pass(flops, elems), Pass(2 * flops, elems), Pass(), 0))
    dims = [out] + top
    for i in range(len(dims) - 1):
        fc(f"top_fc{i + 1}", dims[i], dims[i + 1])
    return Model(
        "dlrm", "DLRM",
        f"DLRM training (Criteo Terabyte shapes: {T} tables x {D}, bottom {a.dlrm_bot}, top {out}-{a.dlrm_top}), "
        f"{B} samples per NPU",
        "Naumov et al. 2019 / facebookresearch/dlrm Criteo Terabyte config; layer 0 = the model-parallel "
        "embedding tables (fwd and ig ALLTOALL, no wg collective); MLPs data parallel (wg ALLREDUCE)",
        "HYBRID_DLRM",
        [f"DLRM (Naumov et al. 2019), Criteo Terabyte: {T} tables of dimension {D}, bottom MLP {a.dlrm_bot},",
         f"dot interaction, top MLP {out}-{a.dlrm_top}; {B} samples per NPU.",
         "HYBRID_DLRM: layer 0's fwd ALLTOALL overlaps the bottom MLP and is waited for at",
         f"dlrm_last_bottom_layer ({last_bottom}); its ig ALLTOALL is issued after the interaction's ig.",
         "The embedding backward (scatter of the gradients into the touched rows) is layer 0's wg compute."],
        layers, extra=[("dlrm_last_bottom_layer", last_bottom)],
        stats={"mlp_params": sum(l.params for l in layers[1:]), "emb_params": emb_params, "alltoall": a2a})


# --------------------------------------------------------------------------- GPT


def gpt(a, bpe):
    """A GPT decoder with Megatron-LM tensor parallelism (Shoeybi et al. 2019). Default shape: GPT-3 XL
    (Brown et al. 2020, Table 2.1: 24 layers, d_model 2048, 1.3B) with GPT-2's 1024-token context and
    50257-token vocabulary (Radford et al. 2019), 16 heads of 128."""
    B, S, H, L, V, P = a.gpt_batch, a.gpt_seq, a.gpt_hidden, a.gpt_layers, a.gpt_vocab, a.gpt_mp
    if H % a.gpt_heads or a.gpt_heads % P or H % P:
        sys.exit(f"gen-workloads: hidden {H}, heads {a.gpt_heads}, model-parallel {P}: heads must divide hidden and "
                 "the model-parallel degree must divide both")
    # Megatron pads the vocabulary to a multiple of 128 x tensor-parallel size.
    Vp = -(-V // (128 * P)) * (128 * P)
    act = B * S * H  # activations of one block boundary (replicated in the group)
    layers = []

    # Token embedding (vocabulary parallel, tied with the LM head) + learned positions (replicated).
    sharded, repl = Vp * H, S * H
    w = sharded // P + repl
    elems = act + S * H + act
    layers.append(Layer("embed", f"token embedding {Vp}x{H} (vocab {V} padded, /{P}) + positions {S}x{H}; "
                        f"params {sharded + repl:,}, per NPU {w:,}", sharded + repl,
                        Pass(act, elems, "ALLREDUCE", act * bpe), Pass(),
                        Pass(act, elems, "ALLREDUCE", w * bpe), w))
    for i in range(L):
        # Attention: LN, QKV (column parallel), scores and context per head, output (row parallel).
        sharded, repl = 4 * H * H + 3 * H, H + 2 * H
        w = sharded // P + repl
        gemm = 8 * B * S * H * H // P
        scores = 4 * B * S * S * H // P
        elems = act + w + act
        layers.append(Layer(f"block{i:02d}_attn", f"attention: LN, QKV {H}->{3 * H}, {a.gpt_heads} heads x {S}x{S}, "
                            f"out {H}->{H}; params {sharded + repl:,}, per NPU {w:,}; fwd {(gemm + scores) / 1e9:.1f} "
                            "GFLOP per NPU", sharded + repl,
                            Pass(gemm + scores, elems, "ALLREDUCE", act * bpe),
                            Pass(gemm + 2 * scores, elems, "ALLREDUCE", act * bpe),
                            Pass(gemm, elems, "ALLREDUCE", w * bpe), w))
        # MLP: LN, fc1 H->4H (column parallel), GeLU, fc2 4H->H (row parallel).
        sharded, repl = 8 * H * H + 4 * H, H + 2 * H
        w = sharded // P + repl
        gemm = 16 * B * S * H * H // P
        elems = act + w + act
        layers.append(Layer(f"block{i:02d}_mlp", f"MLP: LN, fc {H}->{4 * H}, GeLU, fc {4 * H}->{H}; "
                            f"params {sharded + repl:,}, per NPU {w:,}; fwd {gemm / 1e9:.1f} GFLOP per NPU",
                            sharded + repl,
                            Pass(gemm, elems, "ALLREDUCE", act * bpe), Pass(gemm, elems, "ALLREDUCE", act * bpe),
                            Pass(gemm, elems, "ALLREDUCE", w * bpe), w))
    # Final LN + LM head (the tied embedding, vocabulary parallel) + parallel cross-entropy.
    repl = 2 * H
    gemm = 2 * B * S * H * Vp // P
    elems = act + Vp * H // P + repl + B * S * Vp // P
    ce = 3 * B * S * 4  # fp32 max, sum of exp and target logit per token
    layers.append(Layer("lm_head", f"final LN + logits {H}->{Vp} (/{P}, tied to embed) + parallel cross-entropy; "
                        f"params {repl:,} (LN); fwd {gemm / 1e9:.1f} GFLOP per NPU", repl,
                        Pass(gemm, elems, "ALLREDUCE", ce), Pass(gemm, elems, "ALLREDUCE", act * bpe),
                        Pass(gemm, elems, "ALLREDUCE", repl * bpe), repl))
    return Model(
        "gpt", "GPT",
        f"GPT decoder training ({L} layers, hidden {H}, {a.gpt_heads} heads, seq {S}, vocab {V}), Megatron tensor "
        f"parallel x{P}, micro-batch {B} per group",
        "Brown et al. 2020 (GPT-3 XL: 24 x 2048) with GPT-2's context and vocabulary; Megatron-LM: fwd ALLREDUCE "
        "of batch x seq x hidden after attention and MLP, ig ALLREDUCE of the same size, wg ALLREDUCE of the "
        "weight shard (data parallel); compute = FLOPs / model-parallel degree",
        "HYBRID_TRANSFORMER",
        [f"GPT decoder: {L} layers, hidden {H}, {a.gpt_heads} heads, context {S}, vocabulary {V} (padded to {Vp}),",
         f"micro-batch {B}; Megatron-LM tensor parallelism over model_parallel_npu_group = {P} NPUs.",
         "Default shape: GPT-3 XL (Brown et al. 2020, Table 2.1) with GPT-2's context and vocabulary.",
         "Layer norms, row-parallel biases and positions are replicated in the group (whole in each shard).",
         "The LM head's weight is the embedding's (tied): its gradient is reduced with the embed layer's wg."],
        layers, extra=[("model_parallel_npu_group", P)],
        stats={"params_formula": 12 * L * H * H + V * H, "padded_vocab": Vp})


MODELS = (("resnet50", resnet50), ("gnmt", gnmt), ("dlrm", dlrm), ("gpt", gpt))


# --------------------------------------------------------------------------- YAML output


def quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render(m, r, a):
    out = [f"# {m.title} training workload for fabricvp (sw/training/workload.cpp; ASTRA-sim 1.0 conventions).",
           f"# Generated by {SCRIPT}; do not edit. Shapes and roofline: sw/workloads/README.md.",
           f"# Roofline: {r.describe()}; compute_ns per NPU per pass,",
           "# bytes per NPU per collective, update_ns = weights x bytes x 3 / memory bandwidth;",
           "# flops and mem_bytes of each pass: what an NPU with compute.timing roofline times it from.",
           "#"]
    out += [f"# {line}" for line in m.header]
    out += ["workload:",
            f"  description: {quote(m.description)}",
            f"  notes: {quote(m.notes)}",
            f"  parallelism: {m.parallelism}"]
    out += [f"  {k}: {v}" for k, v in m.extra]
    out.append("  layers:")
    for i, l in enumerate(m.layers):
        out.append(f"    # {i}: {l.shape}")
        out.append(f"    - name: {l.name}")
        for key, p in (("fwd", l.fwd), ("ig", l.ig), ("wg", l.wg)):
            nbytes = p.nbytes if p.comm != "NONE" else 0
            out.append(f"      {key + ':':4} {{compute_ns: {r.ns(p.flops, p.elems)}, comm: {p.comm}, bytes: {nbytes}, "
                       f"flops: {int(p.flops)}, mem_bytes: {int(p.elems) * r.bpe}}}")
        out.append(f"      update_ns: {r.update_ns(l.update)}")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- reading back (the check)


class YamlError(Exception):
    pass


def load_pyyaml(text):
    """The document as dicts, lists and raw scalar strings (integers stay text, as yaml-cpp sees them)."""
    import yaml

    def conv(node):
        if isinstance(node, yaml.MappingNode):
            d = {}
            for k, v in node.value:
                if k.value in d:
                    raise YamlError(f"line {k.start_mark.line + 1}: duplicate key '{k.value}'")
                d[k.value] = conv(v)
            return d
        if isinstance(node, yaml.SequenceNode):
            return [conv(x) for x in node.value]
        return node.value

    try:
        return conv(yaml.compose(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as e:
        raise YamlError(str(e))


def load_builtin(text):
    """A small reader of the YAML subset this script writes (block maps and lists, flow maps,
    plain and double-quoted scalars, comments), for machines without PyYAML."""
    lines = []
    for n, raw in enumerate(text.split("\n"), 1):
        s = raw.rstrip()
        if not s.strip() or s.strip().startswith("#"):
            continue
        if "\t" in s[:len(s) - len(s.lstrip())]:
            raise YamlError(f"line {n}: tab in the indentation")
        lines.append([len(s) - len(s.lstrip()), s.strip(), n])

    def scalar(s, n):
        s = s.strip()
        if s.startswith('"'):
            out, i = [], 1
            while i < len(s) and s[i] != '"':
                if s[i] == "\\" and i + 1 < len(s):
                    i += 1
                out.append(s[i])
                i += 1
            if i >= len(s):
                raise YamlError(f"line {n}: unterminated string")
            rest = s[i + 1:].strip()
            if rest and not rest.startswith("#"):
                raise YamlError(f"line {n}: text after a string: {rest}")
            return "".join(out)
        if s.startswith("{"):
            end = s.find("}")
            if end < 0 or (s[end + 1:].strip() and not s[end + 1:].strip().startswith("#")):
                raise YamlError(f"line {n}: malformed flow map")
            d = {}
            for item in filter(None, (x.strip() for x in s[1:end].split(","))):
                if ": " not in item:
                    raise YamlError(f"line {n}: '{item}' is not key: value")
                k, v = item.split(": ", 1)
                if k.strip() in d:
                    raise YamlError(f"line {n}: duplicate key '{k.strip()}'")
                d[k.strip()] = scalar(v, n)
            return d
        if s.startswith(("[", "'", "&", "*", "!", "|", ">")):
            raise YamlError(f"line {n}: YAML this reader does not handle: {s}")
        return re.split(r"\s+#", s, maxsplit=1)[0].strip()

    def block(i, indent):
        if lines[i][1].startswith("- ") or lines[i][1] == "-":
            seq = []
            while i < len(lines) and lines[i][0] == indent and lines[i][1].startswith("-"):
                rest = lines[i][1][1:].lstrip()
                if not rest:
                    raise YamlError(f"line {lines[i][2]}: empty list item")
                # "- key: value" opens a map whose keys are indented like 'key'.
                lines[i] = [indent + len(lines[i][1]) - len(rest), rest, lines[i][2]]
                node, i = block(i, lines[i][0])
                seq.append(node)
            return seq, i
        d = {}
        while i < len(lines) and lines[i][0] == indent:
            ind, s, n = lines[i]
            if s.startswith("-"):
                raise YamlError(f"line {n}: a list item inside a map")
            m = re.match(r"^([^:#\s][^:]*):(\s+(.*))?$", s)
            if not m:
                raise YamlError(f"line {n}: '{s}' is not key: value")
            k, v = m.group(1).strip(), (m.group(3) or "").strip()
            if k in d:
                raise YamlError(f"line {n}: duplicate key '{k}'")
            if v and not v.startswith("#"):
                d[k] = scalar(v, n)
                i += 1
            elif i + 1 < len(lines) and lines[i + 1][0] > ind:
                d[k], i = block(i + 1, lines[i + 1][0])
            elif i + 1 < len(lines) and lines[i + 1][0] == ind and lines[i + 1][1].startswith("-"):
                d[k], i = block(i + 1, ind)  # a list at the key's own indentation
            else:
                d[k] = ""
                i += 1
        if i < len(lines) and lines[i][0] > indent:
            raise YamlError(f"line {lines[i][2]}: unexpected indentation")
        return d, i

    if not lines:
        raise YamlError("empty document")
    doc, i = block(0, lines[0][0])
    if i < len(lines):
        raise YamlError(f"line {lines[i][2]}: unexpected text")
    return doc


UINT = re.compile(r"^[0-9]+$")


def check_workload(path, text, parser):
    """fabricvp's schema rules. Returns (errors, summary)."""
    errs = []
    try:
        doc = load_pyyaml(text) if parser == "pyyaml" else load_builtin(text)
    except YamlError as e:
        return [f"{path}: {e}"], None

    def uint(v, what):
        if not isinstance(v, str) or not UINT.match(v):
            errs.append(f"{path}: {what}: {v!r} is not a non-negative integer (digits only)")
            return 0
        return int(v)

    if not isinstance(doc, dict) or set(doc) != {"workload"} or not isinstance(doc["workload"], dict):
        return [f"{path}: the document must be a map with the single key 'workload'"], None
    w = doc["workload"]
    known = {"description", "parallelism", "model_parallel_npu_group", "checkpoints", "checkpoint_initiates",
             "dlrm_last_bottom_layer", "layers", "notes"}
    errs += [f"{path}: unknown key workload.{k}" for k in w if k not in known]
    for k in ("description", "notes"):
        if k in w and not isinstance(w[k], str):
            errs.append(f"{path}: workload.{k} must be a string")
    par = w.get("parallelism")
    if par not in PARALLELISMS:
        errs.append(f"{path}: parallelism {par!r} is not one of {', '.join(PARALLELISMS)}")
    transformer = isinstance(par, str) and par.startswith("HYBRID_TRANSFORMER")
    is_dlrm = isinstance(par, str) and par.startswith("HYBRID_DLRM")
    if "model_parallel_npu_group" in w:
        if not transformer:
            errs.append(f"{path}: model_parallel_npu_group is only for HYBRID_TRANSFORMER*")
        elif uint(w["model_parallel_npu_group"], "model_parallel_npu_group") < 1:
            errs.append(f"{path}: model_parallel_npu_group must be at least 1")
    if "dlrm_last_bottom_layer" in w and not is_dlrm:
        errs.append(f"{path}: dlrm_last_bottom_layer is only for HYBRID_DLRM*")
    layers = w.get("layers")
    if not isinstance(layers, list) or not layers:
        return errs + [f"{path}: workload.layers must be a non-empty list"], None
    if is_dlrm and uint(w.get("dlrm_last_bottom_layer", "0"), "dlrm_last_bottom_layer") >= len(layers):
        errs.append(f"{path}: dlrm_last_bottom_layer is not a layer")
    summary = {"layers": len(layers), "compute_ns": 0, "wg_allreduce_bytes": 0, "fwd_ig_bytes": 0, "update_ns": 0,
               "names": []}
    names = set()
    data_style = par in ("DATA", "MICRO") or is_dlrm
    for i, l in enumerate(layers):
        if not isinstance(l, dict):
            errs.append(f"{path}: layer {i} is not a map")
            continue
        errs += [f"{path}: layer {i}: unknown key '{k}'" for k in l if k not in ("name", "fwd", "ig", "wg", "update_ns")]
        name = l.get("name")
        if not isinstance(name, str) or not name or re.search(r"\s", name):
            errs.append(f"{path}: layer {i}: name {name!r} (a non-empty name without spaces)")
        elif name in names:
            errs.append(f"{path}: layer {i}: name '{name}' used twice")
        names.add(name)
        summary["names"].append(name)
        for key in ("fwd", "ig", "wg"):
            p = l.get(key)
            if p is None:
                continue
            if not isinstance(p, dict):
                errs.append(f"{path}: {name}.{key} must be a map")
                continue
            errs += [f"{path}: {name}.{key}: unknown key '{k}'" for k in p if k not in ("compute_ns", "comm", "bytes", "flops", "mem_bytes")]
            ns = uint(p.get("compute_ns", "0"), f"{name}.{key}.compute_ns")
            comm = p.get("comm", "NONE")
            nbytes = uint(p.get("bytes", "0"), f"{name}.{key}.bytes")
            if comm not in COMMS:
                errs.append(f"{path}: {name}.{key}.comm {comm!r} is not one of {', '.join(COMMS)}")
            elif comm == "NONE" and nbytes != 0:
                errs.append(f"{path}: {name}.{key}: bytes {nbytes} without a collective")
            elif comm != "NONE" and nbytes == 0:
                errs.append(f"{path}: {name}.{key}: a {comm} of 0 bytes")
            if not (data_style and i == 0 and key == "ig"):  # the loop never runs layer 0's ig there
                summary["compute_ns"] += ns
            if key == "wg" and comm == "ALLREDUCE":
                summary["wg_allreduce_bytes"] += nbytes
            elif comm != "NONE":
                summary["fwd_ig_bytes"] += nbytes
        summary["update_ns"] += uint(l.get("update_ns", "0"), f"{name}.update_ns")
    return errs, summary


def check_public(m, s, a):
    """Sanity checks against the published numbers: list of (ok, text)."""
    params = sum(l.params for l in m.layers)
    out = []
    if m.key == "resnet50":
        ref = 25557032  # torchvision resnet50: conv + batch-norm scale/shift + fc
        out.append((params == ref, f"params {params:,} vs 25,557,032 (torchvision / 'about 25.6M')"))
        gmac = m.stats["macs_per_image"] / 1e9
        ref = 4.09 if a.resnet_variant == "v1.5" else 3.86  # v1: He et al. Table 1 says 3.8e9
        out.append((abs(gmac - ref) / ref < 0.02,
                    f"fwd {gmac:.2f} GMAC ({2 * gmac:.2f} GFLOP) per image vs {ref} GMAC ('4.1 GFLOPs' counts MACs; "
                    "He et al. Table 1: 3.8e9 for v1)"))
        out.append((s["layers"] == 54, f"{s['layers']} layers (49 conv + 4 projection shortcuts + fc = 54)"))
    elif m.key == "gnmt":
        out.append((160e6 <= params <= 290e6, f"params {params / 1e6:.1f}M within 160-290M (depends on the vocabulary)"))
        out.append((s["layers"] == 20, f"{s['layers']} layers (2 embeddings, 16 LSTM, attention, softmax)"))
    elif m.key == "dlrm":
        out.append((True, f"MLP params {m.stats['mlp_params']:,}; embedding params {m.stats['emb_params']:,}"))
        out.append((s["fwd_ig_bytes"] == 2 * m.stats["alltoall"],
                    f"ALLTOALL {m.stats['alltoall']:,} B = batch x tables x dim x bytes, fwd and ig"))
    elif m.key == "gpt":
        ref = m.stats["params_formula"]
        out.append((abs(params - ref) / ref < 0.02,
                    f"params {params / 1e9:.3f}B vs 12*L*h^2 + V*h = {ref / 1e9:.3f}B (padded vocab {m.stats['padded_vocab']},"
                    " positions, biases, LNs)"))
        out.append((s["layers"] == 2 * a.gpt_layers + 2, f"{s['layers']} layers (embed, 2 per block, lm_head)"))
    return out


# --------------------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--out", default=None, help="output folder (default: sw/workloads of this repository)")
    ap.add_argument("--check", action="store_true",
                    help="write nothing: check the files in --out (schema, counts, public numbers) and that they match "
                         "what these options generate")
    ap.add_argument("--parser", choices=("auto", "pyyaml", "builtin"), default="auto",
                    help="YAML reader of the check (auto: PyYAML if installed)")
    r = ap.add_argument_group("roofline")
    r.add_argument("--tflops", type=float, default=125.0, help="peak TFLOPS per NPU (V100 fp16 tensor cores)")
    r.add_argument("--efficiency", type=float, default=0.5, help="achievable fraction of the peak TFLOPS")
    r.add_argument("--mem-GBps", dest="mem_gbps", type=float, default=900.0, help="memory bandwidth per NPU (GB/s)")
    r.add_argument("--bytes-per-elem", dest="bpe", type=int, default=2, help="bytes per element (fp16: 2)")
    g = ap.add_argument_group("models")
    g.add_argument("--batch", type=int, default=None,
                   help="per-NPU batch of every model (overrides the --<model>-batch defaults)")
    g.add_argument("--resnet-batch", type=int, default=32, help="ResNet-50 images per NPU")
    g.add_argument("--resnet-variant", choices=("v1.5", "v1"), default="v1.5",
                   help="v1.5 (torchvision, MLPerf): stride in the 3x3 conv; v1 (the paper): in the first 1x1")
    g.add_argument("--gnmt-batch", type=int, default=64, help="GNMT sentences per NPU")
    g.add_argument("--gnmt-seq", type=int, default=50, help="GNMT tokens per sentence (source and target)")
    g.add_argument("--gnmt-hidden", type=int, default=1024, help="GNMT LSTM units and embedding size")
    g.add_argument("--gnmt-vocab", type=int, default=32000, help="GNMT wordpiece vocabulary")
    g.add_argument("--dlrm-batch", type=int, default=512, help="DLRM samples per NPU")
    g.add_argument("--dlrm-dim", type=int, default=64, help="DLRM embedding dimension")
    g.add_argument("--dlrm-rows", default=CRITEO_TB_ROWS, help="DLRM rows per table, '-'-separated (one per table)")
    g.add_argument("--dlrm-bot", default="13-512-256-64", help="DLRM bottom MLP (dense features first)")
    g.add_argument("--dlrm-top", default="512-512-256-1",
                   help="DLRM top MLP after the interaction (its input size is derived)")
    g.add_argument("--gpt-layers", type=int, default=24, help="GPT transformer blocks")
    g.add_argument("--gpt-hidden", type=int, default=2048, help="GPT hidden size")
    g.add_argument("--gpt-heads", type=int, default=16, help="GPT attention heads")
    g.add_argument("--gpt-seq", type=int, default=1024, help="GPT context (tokens per sample)")
    g.add_argument("--gpt-vocab", type=int, default=50257, help="GPT vocabulary (padded like Megatron)")
    g.add_argument("--gpt-batch", type=int, default=8, help="GPT micro-batch per model-parallel group")
    g.add_argument("--gpt-mp", type=int, default=8, help="Megatron tensor-parallel degree (model_parallel_npu_group)")
    a = ap.parse_args()
    if a.batch is not None:
        a.resnet_batch = a.gnmt_batch = a.dlrm_batch = a.gpt_batch = a.batch
    for k in ("tflops", "efficiency", "mem_gbps", "bpe", "resnet_batch", "gnmt_batch", "gnmt_seq", "gnmt_hidden",
              "gnmt_vocab", "dlrm_batch", "dlrm_dim", "gpt_layers", "gpt_hidden", "gpt_heads", "gpt_seq", "gpt_vocab",
              "gpt_batch", "gpt_mp"):
        if not getattr(a, k) > 0:
            ap.error(f"--{k.replace('_', '-')} must be positive")
    out_dir = a.out if a.out is not None else os.path.join(REPO, "sw", "workloads")
    parser = a.parser
    if parser == "auto":
        try:
            import yaml  # noqa: F401
            parser = "pyyaml"
        except ImportError:
            parser = "builtin"

    roof = Roofline(a.tflops, a.efficiency, a.mem_gbps, a.bpe)
    models = [fn(a, a.bpe) for _, fn in MODELS]
    texts = {m.key: render(m, roof, a) for m in models}
    errors = []
    if not a.check:
        os.makedirs(out_dir, exist_ok=True)
        for m in models:
            with open(os.path.join(out_dir, m.key + ".yaml"), "w", newline="\n") as f:
                f.write(texts[m.key])
    rows = []
    for m in models:
        path = os.path.join(out_dir, m.key + ".yaml")
        try:
            with open(path, newline="") as f:
                text = f.read()
        except OSError as e:
            errors.append(f"{path}: {e.strerror}")
            continue
        if text != texts[m.key]:
            errors.append(f"{path}: differs from what {SCRIPT} generates with these options (regenerate it)")
        errs, s = check_workload(path, text, parser)
        errors += errs
        if s is None:
            continue
        if s["names"] != [l.name for l in m.layers]:
            errors.append(f"{path}: the layers read back are not the generated ones")
        for ok, msg in check_public(m, s, a):
            print(f"  {m.key}: {'ok  ' if ok else 'FAIL'} {msg}")
            if not ok:
                errors.append(f"{path}: {msg}")
        params = sum(l.params for l in m.layers)
        fwd_gflop = sum(l.fwd.flops for l in m.layers) / 1e9
        rows.append((m.key + ".yaml", m.parallelism, s["layers"], params, fwd_gflop, s["compute_ns"],
                     s["wg_allreduce_bytes"], s["fwd_ig_bytes"]))
    print(f"\nroofline: {roof.describe()}; check read with {parser}\n")
    print("| file | parallelism | layers | params | fwd GFLOP / NPU | iteration compute / NPU | wg ALLREDUCE bytes / NPU "
          "| fwd+ig collective bytes / NPU |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for f, par, n, params, gf, ns, wgb, fib in rows:
        print(f"| {f} | {par} | {n} | {params / 1e6:,.2f} M | {gf:,.1f} | {ns / 1e6:,.3f} ms | {wgb:,} "
              f"({wgb / 2**20:,.1f} MiB) | {fib:,} |")
    if errors:
        print("\n" + "\n".join(errors), file=sys.stderr)
        return 1
    print(f"\n{'checked' if a.check else 'wrote and checked'} {len(models)} workloads in {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
