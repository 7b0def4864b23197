// SPDX-License-Identifier: Apache-2.0

// Package dram measures the latency of one random read from memory: a
// pointer chase over a region as large as a table under test, so that a
// bench can say how many such reads a packet costs. Each 64-byte line of
// the region holds the index of the next line to read, in one random
// cycle through every line; each read depends on the one before, so the
// processor cannot overlap them. The region has 4 KiB pages (no huge
// pages), as the kernel's BPF maps do, so the reads pay the same TLB
// misses a table lookup pays.
package dram

import (
	"fmt"
	"math/rand/v2"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

const line = 64

// Result is one measurement.
type Result struct {
	RegionBytes uint64  `json:"region_bytes"`
	Reads       int     `json:"reads"`
	ReadNs      float64 `json:"read_ns"` // one dependent random read
}

// link writes into the first word of each of the lines of words the
// index of the line after it in one random cycle through all of them
// (Sattolo's shuffle of their order).
func link(words []uint64, lines uint64) {
	order := make([]uint32, lines)
	for i := range order {
		order[i] = uint32(i)
	}
	for i := len(order) - 1; i > 0; i-- {
		j := rand.IntN(i)
		order[i], order[j] = order[j], order[i]
	}
	for i, l := range order {
		words[uint64(l)*line/8] = uint64(order[(i+1)%len(order)])
	}
}

// Chase reads reads lines of a region of size bytes, each at the index the
// one before holds, and returns the time per read. The region is
// allocated, filled and released by the call.
func Chase(size uint64, reads int) (Result, error) {
	lines := size / line
	if lines < 2 || reads <= 0 {
		return Result{}, fmt.Errorf("dram: a region of %d bytes and %d reads: want two lines and a read at least", size, reads)
	}
	mem, err := unix.Mmap(-1, 0, int(lines*line), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return Result{}, fmt.Errorf("dram: map %d bytes: %w", size, err)
	}
	defer unix.Munmap(mem)
	if err := unix.Madvise(mem, unix.MADV_NOHUGEPAGE); err != nil {
		return Result{}, fmt.Errorf("dram: no huge pages: %w", err)
	}
	words := unsafe.Slice((*uint64)(unsafe.Pointer(&mem[0])), len(mem)/8)
	link(words, lines)
	next := uint64(0)
	for range min(reads, int(lines)) { // warm the TLB's page walk caches alike
		next = words[next*line/8]
	}
	start := time.Now()
	for range reads {
		next = words[next*line/8]
	}
	elapsed := time.Since(start)
	if next >= lines {
		return Result{}, fmt.Errorf("dram: the chase left the region")
	}
	return Result{RegionBytes: lines * line, Reads: reads, ReadNs: float64(elapsed.Nanoseconds()) / float64(reads)}, nil
}
