// The two directions of a cable between two EthLink link ends, for the cocotb test
// (test_link.py): each carries a frame one byte per clock through a delay line of DELAY
// stages, and flips bit 4 of the byte entering while its `corrupt` input is high.
//
// SPDX-License-Identifier: MIT OR Apache-2.0

`timescale 1ns / 1ps

module ethlink_wire #(
    parameter DELAY = 50
) (
    input wire clk,
    input wire in_valid,
    input wire in_last,
    input wire [7:0] in_data,
    input wire corrupt,
    output wire out_valid,
    output wire out_last,
    output wire [7:0] out_data
);
  reg [9:0] stage[0:DELAY-1];
  integer i;

  initial for (i = 0; i < DELAY; i = i + 1) stage[i] = 10'd0;

  always @(posedge clk) begin
    stage[0] <= {in_valid, in_last, in_data ^ (corrupt ? 8'h10 : 8'h00)};
    for (i = 1; i < DELAY; i = i + 1) stage[i] <= stage[i-1];
  end

  assign {out_valid, out_last, out_data} = stage[DELAY-1];
endmodule

// A to B and B to A.
module ethlink_wires (
    input wire clk,
    input wire ab_in_valid,
    input wire ab_in_last,
    input wire [7:0] ab_in_data,
    input wire ab_corrupt,
    output wire ab_out_valid,
    output wire ab_out_last,
    output wire [7:0] ab_out_data,
    input wire ba_in_valid,
    input wire ba_in_last,
    input wire [7:0] ba_in_data,
    input wire ba_corrupt,
    output wire ba_out_valid,
    output wire ba_out_last,
    output wire [7:0] ba_out_data
);
  ethlink_wire a_to_b (
      .clk(clk),
      .in_valid(ab_in_valid),
      .in_last(ab_in_last),
      .in_data(ab_in_data),
      .corrupt(ab_corrupt),
      .out_valid(ab_out_valid),
      .out_last(ab_out_last),
      .out_data(ab_out_data)
  );
  ethlink_wire b_to_a (
      .clk(clk),
      .in_valid(ba_in_valid),
      .in_last(ba_in_last),
      .in_data(ba_in_data),
      .corrupt(ba_corrupt),
      .out_valid(ba_out_valid),
      .out_last(ba_out_last),
      .out_data(ba_out_data)
  );
endmodule
