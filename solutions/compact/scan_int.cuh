// Reference solution of the compact lab (instructors only): the pieces the compact and
// expand variants share.
//
// exclusive_scan_int is lecture 4's hierarchical scan on ints (Blelloch block scans of
// 2048 elements, a scan of the block sums, a pass adding them back), with lecture 7's
// exclusive form. compact's three-pass variant scans its flags with it, the two-pass
// variant its per-tile counts, and expand its counts.
//
// Workspace slots (lab::workspace) used by this lab's solution; one slot holds one
// array during a call, so arrays alive at the same time never share a slot:
//   kSlotPerElement  flags (compact three_pass) or run offsets (expand), n ints
//   kSlotAddresses   addresses (three_pass) or per-tile offsets (two_pass)
//   kSlotTotal       the device int the count/total is written to before the host copy
//   kSlotScanLevel0  block sums of the scan, level 0 (level 1 uses the next slot)
//   kSlotTiles       tile status words (single_pass) or merge-path splits (expand)
#pragma once

namespace compact_solution {

constexpr int kSlotPerElement = 0;
constexpr int kSlotAddresses = 1;
constexpr int kSlotTotal = 2;
constexpr int kSlotScanLevel0 = 3;  // levels use kSlotScanLevel0 + level (at most 2 levels for n < 2^31)
constexpr int kSlotTiles = 6;

/// Exclusive sum scan of n ints on the default stream: out[i] = in[0] + … + in[i-1];
/// writes the sum of all n into the device int *total. in may equal out (in place).
/// The sum must fit in an int. n = 0 writes *total = 0.
void exclusive_scan_int(const int* in, int* out, int n, int* total);

/// The device int this lab's functions write their count to (workspace slot kSlotTotal).
int* device_total();

/// Copies *total (a device int) to the host, waiting for the work queued before it.
int copy_total_to_host(const int* total);

}  // namespace compact_solution
