// SPDX-License-Identifier: Apache-2.0

// Package api is the daemon's HTTP+JSON interface, served on a unix socket
// to root (and, for reading, to a group: peer.go), and the client the CLI
// talks to it with. The OpenAPI document (openapi.json, also in docs/)
// describes every route.
//
// Every change is expressed against the configuration in force: the server
// copies it, changes the copy, and hands it to the backend, which validates
// it and applies the difference, or changes nothing. Each configuration
// has a revision (revision.go): reads send it as the ETag, and a write
// with If-Match is made only against the revision it names, so that
// clients that read, edit and write back the whole configuration
// (Client.Edit) never lose a change made in between. A request body over
// MaxBody is refused whole (413), never cut.
package api
