// SPDX-License-Identifier: Apache-2.0

package bench

import (
	"encoding/json"
	"fmt"
	"time"
)

// LinkCounters are one interface's counters (ip -s link), as veth keeps
// them: a frame an XDP program received counts in rx, and one the peer's
// XDP program received counts in tx, so the counters see XDP forwarding
// as well as the kernel's.
type LinkCounters struct {
	RxPackets uint64 `json:"rx_packets"`
	RxBytes   uint64 `json:"rx_bytes"`
	TxPackets uint64 `json:"tx_packets"`
	TxBytes   uint64 `json:"tx_bytes"`
	Dropped   uint64 `json:"dropped"` // rx and tx, XDP transmit errors included
}

// add adds o to c.
func (c *LinkCounters) add(o LinkCounters) {
	c.RxPackets += o.RxPackets
	c.RxBytes += o.RxBytes
	c.TxPackets += o.TxPackets
	c.TxBytes += o.TxBytes
	c.Dropped += o.Dropped
}

// sub returns c minus an earlier reading.
func (c LinkCounters) sub(e LinkCounters) LinkCounters {
	return LinkCounters{c.RxPackets - e.RxPackets, c.RxBytes - e.RxBytes, c.TxPackets - e.TxPackets,
		c.TxBytes - e.TxBytes, c.Dropped - e.Dropped}
}

// LinkReading is the DUT's and the client's interface counters at one
// moment: the sum over the balancer's interfaces (what goes into and out
// of the DUT, whatever forwards it) and the client's sending interface.
type LinkReading struct {
	DUT    LinkCounters
	Client LinkCounters
}

// ReadLinks reads the counters of every interface of the balancer and of
// the client's interface clientIf.
func (e *Env) ReadLinks(clientIf string) (LinkReading, error) {
	var r LinkReading
	lb, err := e.linkCounters(e.Topo.LB())
	if err != nil {
		return r, err
	}
	for _, ifname := range e.Topo.LBInterfaces() {
		r.DUT.add(lb[ifname])
	}
	client, err := e.linkCounters(e.Topo.Client())
	if err != nil {
		return r, err
	}
	c, ok := client[clientIf]
	if !ok {
		return r, fmt.Errorf("no interface %s in %s", clientIf, e.Topo.Client())
	}
	r.Client = c
	return r, nil
}

// linkCounters reads every interface's counters in namespace ns.
func (e *Env) linkCounters(ns string) (map[string]LinkCounters, error) {
	out, err := e.RunIn(ns, "ip", "-j", "-s", "link", "show")
	if err != nil {
		return nil, err
	}
	type dir struct {
		Bytes   uint64 `json:"bytes"`
		Packets uint64 `json:"packets"`
		Dropped uint64 `json:"dropped"`
	}
	var links []struct {
		Name  string `json:"ifname"`
		Stats struct {
			Rx dir `json:"rx"`
			Tx dir `json:"tx"`
		} `json:"stats64"`
	}
	if err := json.Unmarshal([]byte(out), &links); err != nil {
		return nil, fmt.Errorf("ip -j -s link show in %s: %w", ns, err)
	}
	m := make(map[string]LinkCounters, len(links))
	for _, l := range links {
		s := l.Stats
		m[l.Name] = LinkCounters{RxPackets: s.Rx.Packets, RxBytes: s.Rx.Bytes, TxPackets: s.Tx.Packets, TxBytes: s.Tx.Bytes,
			Dropped: s.Rx.Dropped + s.Tx.Dropped}
	}
	return m, nil
}

// LinkRates are the rates between two link readings, in the columns of
// the DPVS CPS table: the DUT's packets and bytes per second in and out
// (every balancer interface), the client's packets and bits per second
// received and sent, and the frames its link dropped.
type LinkRates struct {
	DUTInPPS      float64 `json:"dut_in_pps"`
	DUTOutPPS     float64 `json:"dut_out_pps"`
	DUTInBps      float64 `json:"dut_in_bytes_per_s"`
	DUTOutBps     float64 `json:"dut_out_bytes_per_s"`
	ClientRxPPS   float64 `json:"client_rx_pps"`
	ClientTxPPS   float64 `json:"client_tx_pps"`
	ClientRxBits  float64 `json:"client_rx_bits_per_s"`
	ClientTxBits  float64 `json:"client_tx_bits_per_s"`
	ClientDropped uint64  `json:"client_dropped"`
}

// RatesOver returns the rates from an earlier reading to r as if what
// passed between them had passed in d: the frames of a trial's
// connections, those that came after its sender stopped included, over
// the trial's duration, as its connection rate counts them.
func (r LinkReading) RatesOver(e LinkReading, d time.Duration) LinkRates {
	secs := d.Seconds()
	if secs <= 0 {
		return LinkRates{}
	}
	dut, c := r.DUT.sub(e.DUT), r.Client.sub(e.Client)
	per := func(n uint64) float64 { return float64(n) / secs }
	return LinkRates{DUTInPPS: per(dut.RxPackets), DUTOutPPS: per(dut.TxPackets), DUTInBps: per(dut.RxBytes),
		DUTOutBps: per(dut.TxBytes), ClientRxPPS: per(c.RxPackets), ClientTxPPS: per(c.TxPackets),
		ClientRxBits: 8 * per(c.RxBytes), ClientTxBits: 8 * per(c.TxBytes), ClientDropped: c.Dropped}
}
