// ACE SRAM buffer: DEPTH rows of LANES x 32 bits, one write port and one read
// port (simple dual port), partitioned by a table of PARTS base/size registers.
//
// Partition table: cfg_we writes base[cfg_part] and size[cfg_part] at the
// rising edge (reset: every partition empty). Row r of partition p is the
// physical row base[p] + r; it exists when r < size[p] and base[p] + r < DEPTH
// (map_ok), so no configuration can address outside the array.
//
// Read port: rd_en at the edge ending cycle c loads rd_data with the row as it
// was before any write at that same edge (read-first); rd_data holds until the
// next rd_en. Write port: wr_en writes wr_data at the edge.
module ace_buffer #(
    parameter int LANES = 8,
    parameter int DEPTH = 512,
    parameter int PARTS = 4,
    localparam int W = LANES * 32,
    localparam int AW = $clog2(DEPTH),
    localparam int PW = PARTS > 1 ? $clog2(PARTS) : 1
) (
    input logic clk,
    input logic rst_n,

    input logic          cfg_we,
    input logic [PW-1:0] cfg_part,
    input logic [AW-1:0] cfg_base,
    input logic [  AW:0] cfg_size,

    input  logic [PW-1:0] map_part,
    input  logic [AW-1:0] map_row,
    output logic [AW-1:0] map_addr,
    output logic          map_ok,

    input  logic          rd_en,
    input  logic [AW-1:0] rd_addr,
    output logic [ W-1:0] rd_data,

    input logic          wr_en,
    input logic [AW-1:0] wr_addr,
    input logic [ W-1:0] wr_data
);

  logic [W-1:0] mem[DEPTH];
  logic [AW-1:0] base[PARTS];
  logic [AW:0] size[PARTS];
  logic part_ok;
  logic [AW-1:0] sel_base;
  logic [AW:0] sel_size;
  logic [AW:0] phys;

  generate
    if (PARTS == (1 << PW)) begin : g_all_parts
      assign part_ok = 1'b1;
    end else begin : g_some_parts
      assign part_ok = int'(map_part) < PARTS;
    end
  endgenerate

  assign sel_base = part_ok ? base[map_part] : '0;
  assign sel_size = part_ok ? size[map_part] : '0;
  assign phys = {1'b0, sel_base} + {1'b0, map_row};
  assign map_addr = phys[AW-1:0];
  assign map_ok = ({1'b0, map_row} < sel_size) && (phys < (AW + 1)'(DEPTH));

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      for (int p = 0; p < PARTS; p++) begin
        base[p] <= '0;
        size[p] <= '0;
      end
    end else if (cfg_we && int'(cfg_part) < PARTS) begin
      base[cfg_part] <= cfg_base;
      size[cfg_part] <= cfg_size;
    end
  end

  always_ff @(posedge clk) begin
    if (wr_en) mem[wr_addr] <= wr_data;
  end

  always_ff @(posedge clk) begin
    if (rd_en) rd_data <= mem[rd_addr];
  end

endmodule
