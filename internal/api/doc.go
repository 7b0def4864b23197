// SPDX-License-Identifier: Apache-2.0

// Package api is the daemon's HTTP+JSON interface, served on a unix socket
// to root (and, for reading, to a group: peer.go), and the client the CLI
// talks to it with. The OpenAPI document (openapi.json, also in docs/)
// describes every route.
//
// Every change is expressed against the configuration in force: the server
// copies it, changes the copy, and hands it to the backend, which validates
// it and applies the difference, or changes nothing.
package api
