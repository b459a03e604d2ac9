// ACE datapath: partitioned SRAM buffer + phase FSM + reduction ALU.
// Interface, timing and arithmetic are documented in rtl/ace/README.md.
module ace_datapath
  import ace_pkg::*;
#(
    parameter int LANES = 8,
    parameter int DEPTH = 512,
    parameter int PARTS = 4,
    parameter int TW = 16,
    localparam int W = LANES * 32,
    localparam int AW = $clog2(DEPTH),
    localparam int PW = PARTS > 1 ? $clog2(PARTS) : 1
) (
    input logic clk,
    input logic rst_n,  // synchronous, active low

    // partition table
    input logic          cfg_we,
    input logic [PW-1:0] cfg_part,
    input logic [AW-1:0] cfg_base,
    input logic [  AW:0] cfg_size,

    // incoming chunks (network side)
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

    // outgoing results (network side)
    output logic          out_valid,
    input  logic          out_ready,
    output logic [ W-1:0] out_data,
    output logic [TW-1:0] out_tag,
    output logic          out_err,

    // completions (to the command interface)
    output logic          cpl_valid,
    output logic [TW-1:0] cpl_tag,
    output logic          cpl_err,

    output logic idle
);

  localparam int MW = TW + 3 + AW;

  logic [PW-1:0] map_part;
  logic [AW-1:0] map_row, map_addr, rd_addr, wr_addr;
  logic map_ok, rd_en, wr_en;
  logic [W-1:0] rd_data, wr_data;
  logic alu_in_valid, alu_in_ready, alu_out_valid, alu_out_ready;
  logic [1:0] alu_op, alu_dtype;
  logic [W-1:0] alu_a, alu_b, alu_result;
  logic [MW-1:0] alu_tag, alu_out_tag;

  ace_buffer #(
      .LANES(LANES),
      .DEPTH(DEPTH),
      .PARTS(PARTS)
  ) buffer (
      .clk,
      .rst_n,
      .cfg_we,
      .cfg_part,
      .cfg_base,
      .cfg_size,
      .map_part,
      .map_row,
      .map_addr,
      .map_ok,
      .rd_en,
      .rd_addr,
      .rd_data,
      .wr_en,
      .wr_addr,
      .wr_data
  );

  ace_phase_fsm #(
      .LANES(LANES),
      .DEPTH(DEPTH),
      .PARTS(PARTS),
      .TW(TW)
  ) fsm (
      .clk,
      .rst_n,
      .in_valid,
      .in_ready,
      .in_op,
      .in_dtype,
      .in_part,
      .in_row,
      .in_wb,
      .in_send,
      .in_tag,
      .in_data,
      .map_part,
      .map_row,
      .map_addr,
      .map_ok,
      .rd_en,
      .rd_addr,
      .rd_data,
      .wr_en,
      .wr_addr,
      .wr_data,
      .alu_in_valid,
      .alu_in_ready,
      .alu_op,
      .alu_dtype,
      .alu_a,
      .alu_b,
      .alu_tag,
      .alu_out_valid,
      .alu_out_ready,
      .alu_result,
      .alu_out_tag,
      .out_valid,
      .out_ready,
      .out_data,
      .out_tag,
      .out_err,
      .cpl_valid,
      .cpl_tag,
      .cpl_err,
      .idle
  );

  ace_alu #(
      .LANES(LANES),
      .TW(MW)
  ) alu (
      .clk,
      .rst_n,
      .in_valid(alu_in_valid),
      .in_ready(alu_in_ready),
      .in_op(alu_op),
      .in_dtype(alu_dtype),
      .in_a(alu_a),
      .in_b(alu_b),
      .in_tag(alu_tag),
      .out_valid(alu_out_valid),
      .out_ready(alu_out_ready),
      .out_result(alu_result),
      .out_tag(alu_out_tag)
  );

endmodule
