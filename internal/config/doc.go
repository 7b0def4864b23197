// SPDX-License-Identifier: Apache-2.0

// Package config reads, validates and compares xlb's YAML configuration.
//
// Parsing is strict (an unknown key is an error that names it), Validate
// reports every problem with its field path
// (`services[1].reals[0].address: "10.0.0.300" is not an IP address`), and
// Diff computes the changes between two configurations so that applying a
// new one touches only what differs.
package config
