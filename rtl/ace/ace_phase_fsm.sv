// ACE phase FSM: moves each chunk through receive -> reduce -> send.
//
//   receive  a chunk (LANES x 32 bits + op, dtype, partition, row, wb, send,
//            tag) is accepted from the network side (in_valid && in_ready);
//            the same edge issues the buffer read of its local partial and
//            loads the receive stage (P0)
//   reduce   P0 hands {incoming, local} to the ALU (valid/ready, latency 3)
//   send     the ALU result retires: it is written back to the buffer row
//            (wb) and/or sent out (send: out_valid/out_ready); a chunk that is
//            not sent retires without waiting for out_ready. Every retirement
//            pulses cpl_valid with the chunk's tag (completion).
//
// The chunk states are pipelined: up to 4 chunks are in flight (P0 + 3 ALU
// stages), one per cycle. A chunk that is accepted at the edge ending cycle a
// retires at the earliest in cycle a + 4.
//
// Read-after-write hazard: a chunk that reads its row (ADD, FWD) is not
// accepted while an older chunk in flight will still write the same physical
// row (a 4-entry scoreboard of in-flight writes, popped at retirement), so
// every chunk sees the buffer as if the chunks had run one after the other.
//
// Errors: an illegal op (2'd3) or a row outside its partition completes the
// chunk with err = 1: result zero, no buffer write, always sent.
module ace_phase_fsm
  import ace_pkg::*;
#(
    parameter int LANES = 8,
    parameter int DEPTH = 512,
    parameter int PARTS = 4,
    parameter int TW = 16,
    localparam int W = LANES * 32,
    localparam int AW = $clog2(DEPTH),
    localparam int PW = PARTS > 1 ? $clog2(PARTS) : 1,
    localparam int MW = TW + 3 + AW  // chunk context carried through the ALU
) (
    input logic clk,
    input logic rst_n,

    // network side: incoming chunks
    input  logic          in_valid,
    output logic          in_ready,
    input  logic [   1:0] in_op,
    input  logic [   1:0] in_dtype,
    input  logic [PW-1:0] in_part,
    input  logic [AW-1:0] in_row,
    input  logic          in_wb,
    input  logic          in_send,
    input  logic [TW-1:0] in_tag,
    input  logic [ W-1:0] in_data,

    // buffer
    output logic [PW-1:0] map_part,
    output logic [AW-1:0] map_row,
    input  logic [AW-1:0] map_addr,
    input  logic          map_ok,
    output logic          rd_en,
    output logic [AW-1:0] rd_addr,
    input  logic [ W-1:0] rd_data,
    output logic          wr_en,
    output logic [AW-1:0] wr_addr,
    output logic [ W-1:0] wr_data,

    // ALU
    output logic          alu_in_valid,
    input  logic          alu_in_ready,
    output logic [   1:0] alu_op,
    output logic [   1:0] alu_dtype,
    output logic [ W-1:0] alu_a,
    output logic [ W-1:0] alu_b,
    output logic [MW-1:0] alu_tag,
    input  logic          alu_out_valid,
    output logic          alu_out_ready,
    input  logic [ W-1:0] alu_result,
    input  logic [MW-1:0] alu_out_tag,

    // network side: outgoing results
    output logic          out_valid,
    input  logic          out_ready,
    output logic [ W-1:0] out_data,
    output logic [TW-1:0] out_tag,
    output logic          out_err,

    // completion of every chunk (sent or not), in order
    output logic          cpl_valid,
    output logic [TW-1:0] cpl_tag,
    output logic          cpl_err,

    output logic idle  // no chunk in flight
);

  typedef struct packed {
    logic [TW-1:0] tag;
    logic          err;
    logic          send;
    logic          wb;
    logic [AW-1:0] addr;
  } ctx_t;

  localparam int SB = 4;  // in-flight chunks: P0 + 3 ALU stages

  logic ok, reads, hit, hazard, p0_en, accept, retire;
  logic p0_v;
  logic [W-1:0] p0_data;
  logic [1:0] p0_op, p0_dt;
  ctx_t p0_ctx, head;
  logic [SB-1:0] sb_v, sb_wb;
  logic [AW-1:0] sb_addr[SB];
  logic [1:0] sb_wp, sb_rp;

  // receive
  assign map_part = in_part;
  assign map_row = in_row;
  assign ok = in_op != 2'd3 && map_ok;
  assign reads = ok && (in_op == OP_ADD || in_op == OP_FWD);
  always_comb begin
    hit = 1'b0;
    for (int i = 0; i < SB; i++) hit = hit | (sb_v[i] && sb_wb[i] && sb_addr[i] == map_addr);
  end
  assign hazard = reads && hit;
  assign p0_en = !p0_v || alu_in_ready;
  assign in_ready = p0_en && !hazard;
  assign accept = in_valid && in_ready;
  assign rd_en = accept && reads;
  assign rd_addr = map_addr;

  always_ff @(posedge clk) begin
    if (!rst_n) p0_v <= 1'b0;
    else if (p0_en) p0_v <= accept;
  end

  always_ff @(posedge clk) begin
    if (accept) begin
      p0_data <= in_data;
      p0_dt <= in_dtype;
      p0_op <= !ok ? ALU_ZERO : in_op == OP_ADD ? ALU_ADD : in_op == OP_STORE ? ALU_PASS_A : ALU_PASS_B;
      p0_ctx <= '{tag: in_tag, err: !ok, send: in_send || !ok, wb: in_wb && ok, addr: map_addr};
    end
  end

  // reduce
  assign alu_in_valid = p0_v;
  assign alu_op = p0_op;
  assign alu_dtype = p0_dt;
  assign alu_a = p0_data;
  assign alu_b = rd_data;
  assign alu_tag = p0_ctx;

  // send / write back / complete
  assign head = alu_out_tag;
  assign alu_out_ready = out_ready || !head.send;
  assign retire = alu_out_valid && alu_out_ready;
  assign out_valid = alu_out_valid && head.send;
  assign out_data = alu_result;
  assign out_tag = head.tag;
  assign out_err = head.err;
  assign wr_en = retire && head.wb;
  assign wr_addr = head.addr;
  assign wr_data = alu_result;
  assign cpl_valid = retire;
  assign cpl_tag = head.tag;
  assign cpl_err = head.err;

  // scoreboard of in-flight chunks (in order: pushed at accept, popped at retirement)
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      sb_v  <= '0;
      sb_wp <= '0;
      sb_rp <= '0;
    end else begin
      if (retire) begin
        sb_v[sb_rp] <= 1'b0;
        sb_rp <= sb_rp + 2'd1;
      end
      if (accept) begin
        sb_v[sb_wp] <= 1'b1;
        sb_wp <= sb_wp + 2'd1;
      end
    end
  end

  always_ff @(posedge clk) begin
    if (accept) begin
      sb_wb[sb_wp]   <= in_wb && ok;
      sb_addr[sb_wp] <= map_addr;
    end
  end

  assign idle = sb_v == '0;

`ifndef SYNTHESIS
  // Simulation checks. The network side must hold a chunk (valid and tag)
  // until it is accepted; the scoreboard can never overflow.
  logic pending_q;
  logic [TW-1:0] pending_tag_q;
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      pending_q <= 1'b0;
    end else begin
      if (pending_q && (!in_valid || in_tag != pending_tag_q)) begin
        $display("ace_phase_fsm: protocol violation: chunk %0d withdrawn or changed before in_ready", pending_tag_q);
        $finish;
      end
      if (accept && !retire && sb_v[sb_wp]) begin
        $display("ace_phase_fsm: internal error: scoreboard overflow");
        $finish;
      end
      pending_q <= in_valid && !in_ready;
      pending_tag_q <= in_tag;
    end
  end
`endif

endmodule
