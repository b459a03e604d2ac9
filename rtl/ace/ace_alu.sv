// ACE reduction ALU: LANES x 32-bit lanes, three pipeline stages.
//
//   stage 1  unpack, specials, int32 add, pass-through; align and add significands
//   stage 2  normalize (leading-zero count, shift, subnormal clamp)
//   stage 3  round to nearest even, pack (output register)
//
// Latency 3: an operation accepted at the rising edge ending cycle c (in_valid
// && in_ready) is presented on out_valid during cycle c + 3. Throughput one
// operation per cycle. The stages form an elastic pipeline: a stage loads when
// it is empty or its content moves on in the same cycle, so in_ready =
// !(all three stages full && !out_ready) and the ALU holds up to 3 operations.
// in_tag travels with the operation and comes out as out_tag.
module ace_alu
  import ace_pkg::*;
#(
    parameter int LANES = 8,
    parameter int TW = 8  // tag width
) (
    input logic clk,
    input logic rst_n,

    input  logic                 in_valid,
    output logic                 in_ready,
    input  logic [          1:0] in_op,     // ALU_ADD, ALU_PASS_A, ALU_PASS_B, ALU_ZERO
    input  logic [          1:0] in_dtype,  // DT_FP32, DT_BF16, DT_FP16, DT_INT32
    input  logic [LANES*32-1:0]  in_a,
    input  logic [LANES*32-1:0]  in_b,
    input  logic [       TW-1:0] in_tag,

    output logic                 out_valid,
    input  logic                 out_ready,
    output logic [LANES*32-1:0]  out_result,
    output logic [       TW-1:0] out_tag
);

  logic v1, v2, v3;
  logic en1, en2, en3;
  logic [1:0] dt1, dt2;
  logic [TW-1:0] tag1, tag2, tag3;
  early_t e1[LANES];
  aligned_t a1[LANES];
  early_t e2[LANES];
  normal_t n2[LANES];
  logic [31:0] r3[LANES];

  assign en3 = !v3 || out_ready;
  assign en2 = !v2 || en3;
  assign en1 = !v1 || en2;
  assign in_ready = en1;
  assign out_valid = v3;
  assign out_tag = tag3;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      v1 <= 1'b0;
      v2 <= 1'b0;
      v3 <= 1'b0;
    end else begin
      if (en1) v1 <= in_valid;
      if (en2) v2 <= v1;
      if (en3) v3 <= v2;
    end
  end

  // Data registers load only when an operation enters the stage; the
  // floating-point registers only for floating-point additions (clock
  // enables: the adder idles for int32 and pass-through operations).
  always_ff @(posedge clk) begin
    if (en1 && in_valid) begin
      dt1  <= in_dtype;
      tag1 <= in_tag;
      for (int i = 0; i < LANES; i++) e1[i] <= early(in_op, in_dtype, in_a[i*32+:32], in_b[i*32+:32]);
    end
  end

  always_ff @(posedge clk) begin
    if (en1 && in_valid && in_op == ALU_ADD && in_dtype != DT_INT32) begin
      for (int i = 0; i < LANES; i++) a1[i] <= align_add(in_dtype, in_a[i*32+:32], in_b[i*32+:32]);
    end
  end

  always_ff @(posedge clk) begin
    if (en2 && v1) begin
      dt2  <= dt1;
      tag2 <= tag1;
      for (int i = 0; i < LANES; i++) begin
        e2[i] <= e1[i];
        if (!e1[i].done) n2[i] <= normalize(a1[i]);
      end
    end
  end

  always_ff @(posedge clk) begin
    if (en3 && v2) begin
      tag3 <= tag2;
      for (int i = 0; i < LANES; i++) begin
        if (e2[i].done) r3[i] <= e2[i].value;
        else r3[i] <= round_pack(dt2, n2[i]);
      end
    end
  end

  always_comb begin
    for (int i = 0; i < LANES; i++) out_result[i*32+:32] = r3[i];
  end

endmodule
