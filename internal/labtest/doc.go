// SPDX-License-Identifier: Apache-2.0

// Package labtest is the scaffolding of tests that run a real xlb (the
// daemon, the reals' servers): it builds cmd/xlb for them, with the race
// detector when they ask for it. It is imported only from _test.go
// files, so no production binary runs the go tool or links the testing
// package.
package labtest
