// SPDX-License-Identifier: Apache-2.0

// Package keepalived reads keepalived configuration and converts its
// virtual servers to xlb configuration.
//
// It reads the syntax of keepalived.conf (IPVS keepalived 1.x and 2.x,
// and the keepalived of DPVS): words, { } blocks, comments starting with
// '#' or '!', quoted strings and include directives. ParseFile returns
// the statements as a tree of Nodes, each with its file and line.
//
// Convert turns the tree into a config.Config: each virtual_server
// becomes a FullNAT service, its real_servers its reals, and the first
// real's check the service's health check. Whatever has no equivalent in
// xlb (VRRP, sorry servers, quorum, notify scripts, digests, ...) is
// returned as an Unmapped item naming its file and line and why: no
// statement is dropped without being mapped or listed.
package keepalived
