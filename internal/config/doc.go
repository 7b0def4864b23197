// SPDX-License-Identifier: Apache-2.0

// Package config reads xlb's YAML configuration file, checks it, converts
// it to the data path's types and computes what changes between two
// configurations.
//
// The steps are separate so that each caller takes what it needs:
//
//   - Parse decodes strictly: a misspelt or unknown key is an error that
//     names the key and its line.
//   - Validate reports every problem at once, each prefixed with the path
//     of the field at fault, e.g.
//     `services[1].reals[0].address: "10.0.0.300" is not an IP address`.
//   - Desired converts a valid configuration to datapath services, reals
//     and settings; DesiredIn also checks it against an Env: the data
//     path's capacities, the local IPs it holds and the host's own
//     addresses (the daemon's apply does).
//   - Diff compares two Desired states, so that a reload touches only the
//     services, real lists and settings that differ.
//
// Load does the first two for a file.
package config
