// SPDX-License-Identifier: Apache-2.0

// Package run runs a scenario of `xlb bench`: it fills in and checks the
// options, builds the lab, sets each DUT up in turn and hands it to the
// scenario's package (frames, conns and apps, or the datapath cost
// measurement), then keeps the Results: results.json, results.csv,
// report.md and the charts.
package run
