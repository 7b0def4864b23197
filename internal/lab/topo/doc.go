// SPDX-License-Identifier: Apache-2.0

// Package topo builds xlb's test and demo topology in network namespaces:
// a client, a balancer (lb) and N real servers, joined by veth pairs, with
// addresses that exist only inside those namespaces.
//
//	client (c0) ---- (l0) lb (l1..lN) ---- (r0) real1..realN
//
// Every address is in 10.<Net>.0.0/16: the client link is 10.<Net>.1.0/24,
// real i's link 10.<Net>.<10+i>.0/24, the VIP 10.<Net>.0.10 and the
// FullNAT local IP 10.<Net>.2.254 live on the balancer. Two labs with
// different names and nets can coexist.
package topo
