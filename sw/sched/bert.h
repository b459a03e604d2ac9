// Compiler for a BERT-style encoder stack pipelined over TSPs (seed 000 §5.4,
// Figs 17, 18; docs/compute.md "BERT").
//
// Layout: activations are held transposed, one row per feature and the
// positions in the lanes — row f of position tile p (320 positions) is 4
// binary32 vectors, or 2 fp16 vectors, which is exactly an MXM weight tile's
// row (docs/isa.md "LW and MXM"). So every linear layer installs 160-feature
// chunks of the activations as tiles and streams the weights through them:
// input vector (chunk kc, output feature f') holds W[kc*160 .. +160][f'], and
// the result row f' lands as 4 binary32 vectors, already in the layout of the
// next operation. Biases ride along: each fp16 activation tile has a "ones
// row" after its last feature (1.0 in the lanes of real positions) and each
// weight vector the bias in that lane, so the MXM adds them.
//
// One encoder (post-LayerNorm, as BERT):
//   x16 = NARROW(x); [Q K V] = x16 W_qkv + b         (MXM; 1/sqrt(dh) folded into W_q, b_q)
//   per head h: K_h rows by SXM TRANSPOSE of K^T (one per position: dh lanes)
//     scores^T = K_h x Q_h^T tile                      (MXM, keys in rows, queries in lanes)
//     E = EXP(scores^T), E16 = NARROW(E)               (no max subtraction: see docs/compute.md)
//     ctx^T = V_h^T x E16 tiles, sum = ones x E16 tiles (MXM, V rows read with STRIDE 2)
//     ctx = ctx^T * RSQRT(sum)^2                       (VXM, MUL BCAST 4)
//   y = NARROW(ctx) W_o + b_o + x;  x1 = LayerNorm(y)  (sums over features: VXM ADD trees)
//   h = x1 W_1 + b_1;  g = GELU(h) (tanh form, via EXP and RSQRT);  x' = LayerNorm(g W_2 + b_2 + x1)
//
// Pipeline: the encoders are split into consecutive stages, one per TSP
// (ranks 0 .. tsps-1); inference i's input X (binary32) is written over PCIe
// into stage 0, each stage's output goes over C2C (spread over link-disjoint
// routes) into the next stage's input buffer (two per stage: inference i + 1
// arrives while i is computed), and the last stage writes it back to the host
// with HOSTW. Every instruction's cycle is fixed here (sched::Engine) and each
// inference's completion predicted; the host reference
// (systems/groq/bert_data.h) repeats every rounding in the same order.
#pragma once

#include <cstdint>
#include <vector>

#include "sw/asm/program.h"
#include "sw/sched/machine.h"

namespace fabricvp::sched {

/// Positions per position tile (the lanes of an MXM result), features per fp16 chunk.
constexpr uint32_t kBertLanes = 320, kBertK = 160;
/// The constant vectors at BertPart::const_vec (offsets).
enum BertConst : uint32_t {
  kBertOnes = 0,    ///< fp16 1.0 in every lane (softmax sums)
  kBertInvH = 1,    ///< binary32 1 / hidden
  kBertNegEps = 2,  ///< -1e-12 (LayerNorm: var - (-eps))
  kBertGeluC1 = 3,  ///< 0.044715
  kBertGeluC2 = 4,  ///< -2 sqrt(2 / pi)
  kBertNegOne = 5,  ///< -1
  kBertMask = 6,    ///< 4 binary32 vectors: 1 in the lanes of the last tile's real positions, else 0
  kBertConsts = 10,
};

struct BertRequest {
  uint32_t encoders = 24;
  uint32_t tsps = 4;  ///< pipeline stages: job ranks 0 .. tsps-1
  uint32_t hidden = 1024, heads = 16, ffn = 4096, seq = 384;
  uint32_t inferences = 1;  ///< back to back through the pipeline
  uint32_t paths = 7;       ///< routes a stage's output is spread over
  /// One inference timed from its launch (cycle 0), stage 0's input already
  /// in in_vec[0]: the host runtime writes it and launches the program
  /// (Host::invoke) once per run.
  bool launched = false;
};

/// One pipeline stage.
struct BertPart {
  uint32_t rank = 0, chip = 0;
  uint32_t enc0 = 0, encs = 0;  ///< its encoders [enc0, enc0 + encs)
  uint32_t w_vec = 0;           ///< encoder enc0 + e's weights at w_vec + e * BertPlan::enc_vectors
  uint32_t in_vec[2] = {0, 0};  ///< input X of even / odd inferences: binary32 [tiles][hidden][4]
  uint32_t const_vec = 0;       ///< BertConst
  std::vector<uint32_t> ones;   ///< fp16 ones rows (2 vectors each: 1.0 in the lanes of real positions)
  uint32_t sram_vectors = 0;    ///< vectors used, forwarding scratch excluded
};

struct BertPlan {
  BertRequest req;
  uint32_t tiles = 0;  ///< position tiles: ceil(seq / 320)
  uint32_t dh = 0;     ///< head dimension: hidden / heads
  uint32_t kh = 0;     ///< 160-row chunks of hidden + 1 (the ones row)
  uint32_t kf = 0;     ///< 160-row chunks of ffn + 1
  /// One encoder's weights, vector offsets from its base: W^T vectors
  /// chunk-major (vector kc * out + f' = rows kc*160 .. of column f', the bias
  /// in the lane of row `in`), then LayerNorm's gamma and -beta (one binary32
  /// vector per feature, every lane equal).
  uint32_t w_qkv = 0, w_o = 0, w_1 = 0, w_2 = 0, ln_g1 = 0, ln_b1 = 0, ln_g2 = 0, ln_b2 = 0, enc_vectors = 0;
  std::vector<BertPart> parts;
  std::vector<sw::Program> programs;  ///< per physical chip
  /// Host writes of the inputs into stage 0 (one per inference, in order).
  struct Input {
    uint32_t inference = 0, addr = 0, n = 0;
    uint64_t start_ps = 0;  ///< when the PCIe link starts sending it
  };
  std::vector<Input> inputs;
  std::vector<uint64_t> done_ps;  ///< per inference: its output in host memory (launched: from the launch)
  uint64_t input_ps = 0;          ///< one input's PCIe write on an idle link: first packet to last vector landed
  uint64_t predicted_ps = 0;      ///< last write of the schedule
  uint64_t subops = 0, weight_loads = 0, transposes = 0, vxm_ops = 0, sent_vectors = 0;

  /// Vectors of one inference's X (input and output): tiles x hidden x 4.
  uint64_t x_vectors() const { return uint64_t(tiles) * req.hidden * 4; }
  /// Host vector address of inference i's output (HOSTW).
  uint64_t host_out_vec(uint32_t i) const { return uint64_t(i) * x_vectors(); }
  /// FLOPs of one inference over the real positions (2 per multiply-accumulate).
  double flops() const;
  /// Latency of inference i: its input's first PCIe packet to its output in host memory.
  uint64_t latency_ps(uint32_t i) const { return done_ps[i] - inputs[i].start_ps; }
};

/// Throws core::ConfigError for what the machine cannot run.
BertPlan plan_bert(const Machine& m, const BertRequest& r);

}  // namespace fabricvp::sched
