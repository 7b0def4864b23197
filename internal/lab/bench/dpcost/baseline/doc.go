// SPDX-License-Identifier: Apache-2.0

// Package baseline loads the reference XDP programs that xlb's
// benchmarks are measured against in the same run, so that every figure
// can be reported as a ratio.
package baseline
