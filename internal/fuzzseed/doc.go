// SPDX-License-Identifier: Apache-2.0

// Package fuzzseed gives a fuzz target its seed corpus from what the
// package's tests already hold: the files of its testdata and the
// string literals of its _test.go files (the inputs of its
// table-driven tests), so that the seeds grow with the tests and are
// never copied by hand.
//
// The package is imported only from _test.go files.
package fuzzseed
