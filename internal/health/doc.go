// SPDX-License-Identifier: Apache-2.0

// Package health checks real servers the way keepalived's checkers do:
// TCP connect, HTTP(S) GET with an expected status and body, UDP
// send/expect and an external command, each real on its own interval,
// from the balancer's local IP. A Monitor runs the checks and turns
// their results into up/down transitions with rise and fall counts.
//
// A command runs as its check's user (nobody unless configured), without
// a shell unless the check asks for one, in a process group killed at
// the timeout, its output bounded, and a Monitor runs at most so many
// commands at once (Limiter).
package health
