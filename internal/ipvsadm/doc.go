// SPDX-License-Identifier: Apache-2.0

// Package ipvsadm speaks ipvsadm(8): it parses ipvsadm 1.31 command
// lines (with DPVS's FullNAT and local-address extensions) into a typed
// Command, turns commands into requests of xlb's API or edits of its
// configuration, and prints listings byte for byte as ipvsadm 1.31 does
// (ipvsadm -L, --stats, --rate, --exact, -c, --timeout, -S), with DPVS's
// FullNat forward name and -G local-address table.
//
// It is pure: no sockets, files or clocks; the caller fetches what a
// command needs from the daemon and hands it to the formatters with an
// io.Writer.
package ipvsadm
