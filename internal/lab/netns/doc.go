// SPDX-License-Identifier: Apache-2.0

// Package netns runs code inside named network namespaces (those of
// `ip netns`, under /run/netns): a function on an OS thread of its own
// (Run), or many functions one after another on a long-lived thread
// (Worker). A thread that entered a namespace never goes back to Go's
// pool while it is in another namespace than the one it came from: it is
// moved home first, or else discarded when its goroutine ends.
//
// It also runs ip(8) and sysctl(8) in a namespace, the two commands
// every lab and test environment of xlb builds its namespaces with.
package netns
