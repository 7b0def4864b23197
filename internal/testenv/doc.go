// SPDX-License-Identifier: Apache-2.0

// Package testenv decides what a test does when the environment it needs
// is missing: root, a tool on PATH, a bpffs mount. By default such a test
// skips, so that `go test ./...` works for a developer without root. When
// XLB_REQUIRE_PRIVILEGED=1 (CI sets it) the test fails instead, so a
// privileged test cannot hide behind a skip where it is supposed to run.
//
// The package is imported only from _test.go files.
package testenv
