// ACE datapath: encodings shared by every block, and the element arithmetic of
// the reduction ALU split into its three pipeline stages.
//
// Floating point (fp32 = IEEE binary32, bf16, fp16 = binary16): round to
// nearest, ties to even; subnormal operands and results (no flush to zero);
// overflow gives infinity; x + (-x) = +0, (-0) + (-0) = -0; inf + (-inf) = NaN.
// NaN rule: every NaN result is the canonical quiet NaN with the sign bit
// clear (fp32 0x7fc00000, bf16 0x7fc0, fp16 0x7e00), whatever the NaN inputs.
// int32 wraps (two's complement). A lane is 32 bits; 16-bit elements use its
// low half, and the high half of a 16-bit sum is zero.
//
// The three formats share one adder: operands are unpacked to a biased
// exponent (>= 1, the format's own bias) and a 24-bit significand with the
// hidden bit at bit 23 (bf16 and fp16 fractions sit at the top of the field),
// added with guard, round and sticky bits, normalized, and rounded at the
// format's own precision (24, 8 or 11 bits).
package ace_pkg;

  // Element types (in_dtype).
  localparam logic [1:0] DT_FP32 = 2'd0;
  localparam logic [1:0] DT_BF16 = 2'd1;
  localparam logic [1:0] DT_FP16 = 2'd2;
  localparam logic [1:0] DT_INT32 = 2'd3;

  // Chunk operations (in_op); 2'd3 is illegal and completes the chunk with err.
  localparam logic [1:0] OP_ADD = 2'd0;    // result = incoming + local partial
  localparam logic [1:0] OP_STORE = 2'd1;  // result = incoming
  localparam logic [1:0] OP_FWD = 2'd2;    // result = local partial

  // ALU operations.
  localparam logic [1:0] ALU_ADD = 2'd0;     // a + b in the element type
  localparam logic [1:0] ALU_PASS_A = 2'd1;  // a (all 32 bits)
  localparam logic [1:0] ALU_PASS_B = 2'd2;  // b (all 32 bits)
  localparam logic [1:0] ALU_ZERO = 2'd3;    // 0

  // One finite floating-point operand in the common layout.
  typedef struct packed {
    logic        sign;
    logic [8:0]  exp;  // biased exponent, 1 for zeros and subnormals
    logic [23:0] sig;  // significand, hidden bit at 23
  } operand_t;

  // Sign and special class of a floating-point operand.
  typedef struct packed {
    logic sign;
    logic inf;
    logic nan;
  } class_t;

  // A lane whose result is already known after stage 1 (NaN, infinity, int32,
  // pass-through): it bypasses normalization and rounding.
  typedef struct packed {
    logic        done;
    logic [31:0] value;
  } early_t;

  // Stage 1 -> 2: aligned sum of the significands with guard, round, sticky.
  typedef struct packed {
    logic        sign;
    logic [8:0]  exp;  // exponent of the larger operand
    logic [27:0] sum;  // carry, 24 significand bits, G, R, S
  } aligned_t;

  // Stage 2 -> 3: normalized significand (hidden bit at 26 unless subnormal).
  typedef struct packed {
    logic        sign;
    logic [8:0]  exp;
    logic [26:0] sig;
  } normal_t;

  function automatic logic [31:0] canonical_nan(logic [1:0] dt);
    case (dt)
      DT_BF16: return 32'h0000_7fc0;
      DT_FP16: return 32'h0000_7e00;
      default: return 32'h7fc0_0000;
    endcase
  endfunction

  function automatic logic [31:0] infinity(logic [1:0] dt, logic s);
    case (dt)
      DT_BF16: return {16'b0, s, 8'hff, 7'b0};
      DT_FP16: return {16'b0, s, 5'h1f, 10'b0};
      default: return {s, 8'hff, 23'b0};
    endcase
  endfunction

  // Sign, biased exponent field and fraction (aligned to bit 22) of an element.
  typedef struct packed {
    logic        sign;
    logic [7:0]  ef;
    logic [22:0] frac;
  } fields_t;

  function automatic fields_t fields(logic [31:0] x, logic [1:0] dt);
    fields_t f;
    case (dt)
      DT_BF16: f = '{sign: x[15], ef: x[14:7], frac: {x[6:0], 16'b0}};
      DT_FP16: f = '{sign: x[15], ef: {3'b0, x[14:10]}, frac: {x[9:0], 13'b0}};
      DT_FP32, DT_INT32: f = '{sign: x[31], ef: x[30:23], frac: x[22:0]};
    endcase
    return f;
  endfunction

  function automatic class_t classify(logic [31:0] x, logic [1:0] dt);
    fields_t f;
    logic top;  // exponent field all ones
    f = fields(x, dt);
    top = f.ef == ((dt == DT_FP16) ? 8'h1f : 8'hff);
    return '{sign: f.sign, inf: top && f.frac == 23'b0, nan: top && f.frac != 23'b0};
  endfunction

  function automatic operand_t unpack(logic [31:0] x, logic [1:0] dt);
    fields_t f;
    f = fields(x, dt);
    return '{sign: f.sign, exp: (f.ef == 8'b0) ? 9'd1 : {1'b0, f.ef}, sig: {f.ef != 8'b0, f.frac}};
  endfunction

  // Stage 1, lanes whose result needs no rounding.
  function automatic early_t early(logic [1:0] op, logic [1:0] dt, logic [31:0] a, logic [31:0] b);
    class_t x, y;
    early_t r;
    x = classify(a, dt);
    y = classify(b, dt);
    r.done = 1'b1;
    r.value = 32'b0;
    case (op)
      ALU_PASS_A: r.value = a;
      ALU_PASS_B: r.value = b;
      ALU_ZERO: r.value = 32'b0;
      ALU_ADD: begin
        if (dt == DT_INT32) r.value = a + b;
        else if (x.nan || y.nan || (x.inf && y.inf && x.sign != y.sign)) r.value = canonical_nan(dt);
        else if (x.inf || y.inf) r.value = infinity(dt, x.inf ? x.sign : y.sign);
        else r.done = 1'b0;
      end
    endcase
    return r;
  endfunction

  // Stage 1, finite operands: order by magnitude, align the smaller one
  // (bits shifted out collapse into the sticky bit) and add or subtract.
  function automatic aligned_t align_add(logic [1:0] dt, logic [31:0] a, logic [31:0] b);
    operand_t x, y, lg, sm;
    logic [8:0] d;
    logic [26:0] ext, shifted;
    logic sticky;
    logic [27:0] lhs, rhs, sum;
    aligned_t r;
    x = unpack(a, dt);
    y = unpack(b, dt);
    if ({y.exp, y.sig} > {x.exp, x.sig}) begin
      lg = y;
      sm = x;
    end else begin
      lg = x;
      sm = y;
    end
    d = lg.exp - sm.exp;
    ext = {sm.sig, 3'b000};
    if (d >= 9'd27) begin
      shifted = 27'b0;
      sticky = sm.sig != 24'b0;
    end else begin
      shifted = ext >> d;
      sticky = (ext & ~({27{1'b1}} << d)) != 27'b0;
    end
    lhs = {1'b0, lg.sig, 3'b000};
    rhs = {1'b0, shifted[26:1], shifted[0] | sticky};
    sum = (lg.sign != sm.sign) ? lhs - rhs : lhs + rhs;
    r.sum = sum;
    r.exp = lg.exp;
    // An exact zero is +0 unless both operands are negative (round to nearest).
    r.sign = (sum == 28'b0) ? (x.sign & y.sign) : lg.sign;
    return r;
  endfunction

  // Leading zeros of a 27-bit value (27 when it is zero): binary search, a
  // 16-, 8-, 4-, 2- and 1-bit step.
  function automatic logic [4:0] lead_zeros(logic [26:0] v);
    logic [31:0] x;
    logic [4:0] n;
    x = {v, 5'b11111};
    n = 5'd0;
    for (int k = 4; k >= 0; k--) begin
      if ((x >> (32 - (1 << k))) == 32'b0) begin
        n[k] = 1'b1;
        x = x << (1 << k);
      end
    end
    return n;
  endfunction

  // Stage 2: carry out shifts right (sticky kept); cancellation shifts left,
  // but never below the smallest exponent (the result is then subnormal).
  function automatic normal_t normalize(aligned_t s);
    normal_t r;
    logic [8:0] lz, sh;
    r.sign = s.sign;
    if (s.sum[27]) begin
      r.sig = {s.sum[27:2], s.sum[1] | s.sum[0]};
      r.exp = s.exp + 9'd1;
    end else begin
      lz = {4'b0, lead_zeros(s.sum[26:0])};
      sh = (lz < s.exp) ? lz : s.exp - 9'd1;
      r.sig = s.sum[26:0] << sh;
      r.exp = s.exp - sh;
    end
    return r;
  endfunction

  // Stage 3: round to nearest even at the format's precision and pack.
  function automatic logic [31:0] round_pack(logic [1:0] dt, normal_t n);
    logic [4:0] cut;     // 3 + fraction bits the format drops
    logic [26:0] unit;   // weight of the result's last significand bit
    logic guard, sticky, lsb, normal;
    logic [24:0] w;      // rounded significand: carry at 24, hidden bit at 23
    logic [8:0] e;
    logic [7:0] ef;
    case (dt)
      DT_BF16: cut = 5'd19;
      DT_FP16: cut = 5'd16;
      default: cut = 5'd3;
    endcase
    unit = 27'd1 << cut;
    guard = (n.sig & (unit >> 1)) != 27'b0;
    sticky = (n.sig & ((unit >> 1) - 27'd1)) != 27'b0;
    lsb = (n.sig & unit) != 27'b0;
    w = 25'(({1'b0, n.sig & ~(unit - 27'd1)} + ((guard && (sticky || lsb)) ? {1'b0, unit} : 28'b0)) >> 3);
    e = n.exp;
    // Rounding up to 2^p gives 1.0 at the next exponent; a subnormal that rounds
    // up to the hidden bit is the smallest normal (its exponent is already 1).
    if (w[24]) begin
      w = 25'h80_0000;
      e = e + 9'd1;
    end
    normal = w[23];
    if (normal && e >= ((dt == DT_FP16) ? 9'd31 : 9'd255)) return infinity(dt, n.sign);
    ef = normal ? e[7:0] : 8'b0;
    case (dt)
      DT_BF16: return {16'b0, n.sign, ef, w[22:16]};
      DT_FP16: return {16'b0, n.sign, ef[4:0], w[22:13]};
      default: return {n.sign, ef, w[22:0]};
    endcase
  endfunction

endpackage
