// SPDX-License-Identifier: Apache-2.0

package conns

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/bench"
	"github.com/xlb-dev/xlb/internal/lab/bench/endpoint"
	"github.com/xlb-dev/xlb/internal/lab/netns"
)

// The XDP endpoints in the lab: the server on every real (and on real
// 1's end of the direct link), the client on the client's interfaces,
// with client addresses from the benchmarking block of RFC 2544, which
// the balancer routes back to the client.
const (
	endpointPort     = 80
	clientBlock      = "198.18.0.0/15"
	clientFirstPort  = 1024
	clientPortsPerIP = 64000
)

var clientFirstAddr = netip.MustParseAddr("198.18.0.1")

// Latency summarises a histogram in microseconds.
type Latency struct {
	Count  uint64  `json:"count"`
	MeanUs float64 `json:"mean_us"`
	P50Us  float64 `json:"p50_us"`
	P90Us  float64 `json:"p90_us"`
	P99Us  float64 `json:"p99_us"`
	MaxUs  float64 `json:"max_us"`
}

func summarize(h endpoint.Histogram) Latency {
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	return Latency{Count: h.Total(), MeanUs: us(h.Mean()), P50Us: us(h.Quantile(0.5)), P90Us: us(h.Quantile(0.9)),
		P99Us: us(h.Quantile(0.99)), MaxUs: us(h.Max())}
}

// ConnTrial is one trial of the XDP endpoints through a DUT.
type ConnTrial struct {
	Scenario string  `json:"scenario"`
	Role     string  `json:"role"` // max, search, cc, rr, keepalive
	DUT      string  `json:"dut"`
	Cores    int     `json:"cores"`     // sender CPUs (the DUT works on the same CPUs)
	AskedCPS float64 `json:"asked_cps"` // 0: as fast as the client goes
	Duration float64 `json:"duration_s"`
	Slots    int     `json:"slots"`
	// Client and Server are the endpoints' counters over the trial.
	Client endpoint.ClientStats `json:"client"`
	Server endpoint.ServerStats `json:"server"`
	// OfferedCPS is the connections opened per second; CPS those
	// completed (closed, or established for keepalive trials).
	OfferedCPS   float64 `json:"offered_cps"`
	CPS          float64 `json:"cps"`
	RequestRate  float64 `json:"request_rate"` // responses per second
	ResponseMbps float64 `json:"response_mbps"`
	Errors       uint64  `json:"errors"` // RSTs, timeouts, retransmissions, unexpected segments
	Handshake    Latency `json:"handshake"`
	Response     Latency `json:"response"`
	// DUTConns are the connections in the DUT's table after the trial
	// (xlb's or conntrack's), DUTMemBytes the memory they take.
	DUTConns    uint64            `json:"dut_conns,omitempty"`
	DUTMemBytes uint64            `json:"dut_mem_bytes,omitempty"`
	DUTMemHow   string            `json:"dut_mem_how,omitempty"`
	DUTDrops    map[string]uint64 `json:"dut_drops,omitempty"`
	// Links are the DUT's and the client's packet and byte rates while
	// the client sent (cps trials: the columns of the DPVS table).
	Links   *bench.LinkRates `json:"links,omitempty"`
	Valid   bool             `json:"valid"`
	Invalid string           `json:"invalid,omitempty"`
}

// SearchValid, SearchLossPct and SearchOffered let bench.Search read a
// connection trial as a frame trial: errors are its loss, connections
// its frames.
func (t ConnTrial) SearchValid() bool { return t.Valid }

// SearchLossPct is the connections lost, in percent of those attempted.
func (t ConnTrial) SearchLossPct() float64 {
	if t.Client.Attempted == 0 {
		return 100
	}
	// a busy slot is a connection that had not ended when its slot
	// came round again (slots/rate seconds later): an error too
	lost := t.Errors + t.Client.Busy + t.Client.Attempted - min(t.Client.Attempted, t.Client.Closed)
	return 100 * float64(lost) / float64(t.Client.Attempted+t.Client.Busy)
}

// SearchOffered is the rate of connections opened.
func (t ConnTrial) SearchOffered() float64 { return t.OfferedCPS }

// connLab is the endpoints set up for one DUT.
type connLab struct {
	e       *bench.Env
	dut     bench.DUT
	server  *endpoint.Server
	client  *endpoint.Client
	cfg     endpoint.ClientConfig
	ns      string // the client's namespace
	ifname  string // the client's sending interface
	drained bool
}

// connSpec is what the endpoints of a trial do.
type connSpec struct {
	// senderCPU is the first sender's CPU: where the client's answers
	// go when the DUT runs on workers (endpoint.ClientConfig.ReceiveOn)
	senderCPU         int
	slots             int
	requestSize       int
	responseSize      int
	keepalive         bool
	keepaliveInterval time.Duration
}

// newConnLab attaches fresh endpoints for dut, which is set up.
func newConnLab(e *bench.Env, dut bench.DUT, s connSpec) (cl *connLab, err error) {
	if err := e.UseTCP(); err != nil {
		return nil, err
	}
	t := e.Topo
	cl = &connLab{e: e, dut: dut, ns: t.Client(), ifname: "c0"}
	dstMAC := e.LBMAC()
	if dut.Name() == "direct" {
		cl.ifname = bench.DirectClientIf
		if dstMAC, err = netns.HardwareAddr(t.Real(1), bench.DirectRealIf); err != nil {
			return nil, err
		}
	} else {
		// replies to the client block go back through the client's
		// address, whose neighbour entry never needs resolving
		if err := netns.IPIn(t.LB(), "route", "replace", clientBlock, "via", t.ClientAddr().String(), "dev", "l0"); err != nil {
			return nil, err
		}
		if err := netns.IPIn(t.LB(), "neigh", "replace", t.ClientAddr().String(), "lladdr", e.ClientMAC().String(), "dev", "l0", "nud", "permanent"); err != nil {
			return nil, err
		}
	}
	srcMAC, err := netns.HardwareAddr(cl.ns, cl.ifname)
	if err != nil {
		return nil, err
	}
	lab := cl // a failed return sets cl to nil before this runs
	defer func() {
		if err != nil {
			lab.Close()
		}
	}()
	if cl.server, err = endpoint.NewServer(endpoint.ServerConfig{PortLo: endpointPort, PortHi: endpointPort, ResponseSize: s.responseSize}); err != nil {
		return nil, err
	}
	for i := 1; i <= t.Reals; i++ {
		if err := cl.server.Attach(t.Real(i), "r0"); err != nil {
			return nil, err
		}
	}
	if err := cl.server.Attach(t.Real(1), bench.DirectRealIf); err != nil {
		return nil, err
	}
	if base, _ := bench.SplitWorkers(dut.Name()); !bench.IsXLB(dut) && base != "direct" && base != "xdp-fwd" {
		// the kernel forwards: see AttachPass
		for _, ifname := range t.LBInterfaces() {
			if err := cl.server.AttachPass(t.LB(), ifname); err != nil {
				return nil, err
			}
		}
	}
	cl.cfg = endpoint.ClientConfig{SrcMAC: srcMAC, DstMAC: dstMAC, Src: clientFirstAddr, SrcPort: clientFirstPort,
		Ports: min(clientPortsPerIP, s.slots), Slots: s.slots,
		Dst:         netip.AddrPortFrom(dut.Target(e, false, false), endpointPort),
		RequestSize: s.requestSize, Keepalive: s.keepalive, KeepaliveInterval: s.keepaliveInterval}
	if w, ok := dut.(bench.WorkerDUT); ok && len(w.Workers()) > 0 {
		cl.cfg.ReceiveOn = []int{s.senderCPU}
	}
	if cl.client, err = endpoint.NewClient(cl.cfg); err != nil {
		return nil, err
	}
	if err := cl.client.Attach(cl.ns, cl.ifname); err != nil {
		return nil, err
	}
	return cl, nil
}

// Close detaches the endpoints.
func (cl *connLab) Close() {
	if cl.client != nil {
		_ = cl.client.Close()
	}
	if cl.server != nil {
		_ = cl.server.Close()
	}
}

// reading is the counters at one moment.
type reading struct {
	client     endpoint.ClientStats
	server     endpoint.ServerStats
	handshake  endpoint.Histogram
	response   endpoint.Histogram
	drops      map[string]uint64
	start, end time.Time
}

func (cl *connLab) read(ctx context.Context) (r reading, err error) {
	if r.client, err = cl.client.Stats(); err != nil {
		return r, err
	}
	if r.server, err = cl.server.Stats(); err != nil {
		return r, err
	}
	if r.handshake, err = cl.client.Histogram(endpoint.Handshake); err != nil {
		return r, err
	}
	if r.response, err = cl.client.Histogram(endpoint.Response); err != nil {
		return r, err
	}
	if dc, ok := cl.dut.(bench.DropCounter); ok {
		r.drops, err = dc.Drops(ctx)
	}
	return r, err
}

// run runs the client's sender.
func (cl *connLab) run(ctx context.Context, job endpoint.Job, rate float64, visits uint64, d time.Duration, cpus []int) error {
	return cl.client.Run(ctx, job, endpoint.RunOptions{Namespace: cl.ns, Interface: cl.ifname, Rate: rate, Visits: visits,
		Duration: d, CPUs: cpus})
}

// settle waits for the connections in flight: a moment, then while any
// is unaccounted for, Tick sweeps every rto (which retransmit, then give
// up after the retries), so every connection ends counted.
func (cl *connLab) settle(ctx context.Context, cpus []int, keepalive bool) error {
	done := func() (bool, error) {
		s, err := cl.client.Stats()
		if keepalive {
			return s.Responses+s.RSTs+s.Timeouts >= s.Requests && s.Established+s.RSTs+s.Timeouts >= s.Attempted, err
		}
		return s.Closed+s.RSTs+s.Timeouts >= s.Attempted, err
	}
	time.Sleep(20 * time.Millisecond)
	// a connection lost at its first segment is given up at the
	// sweep after its last retransmission
	for i := 0; i < cl.cfg.MaxRetries+3 && ctx.Err() == nil; i++ {
		ok, err := done()
		if err != nil || ok {
			return err
		}
		time.Sleep(endpointRTO)
		if err := cl.run(ctx, endpoint.Tick, 0, uint64(cl.cfg.Slots), 10*time.Second, cpus); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// endpointRTO is the client's retransmission timeout (its default).
const endpointRTO = 200 * time.Millisecond

// trial fills a ConnTrial from two readings.
func (cl *connLab) trial(scenario, role string, cores int, asked float64, d time.Duration, before, after reading) ConnTrial {
	t := ConnTrial{Scenario: scenario, Role: role, DUT: cl.dut.Name(), Cores: cores, AskedCPS: asked,
		Duration: d.Seconds(), Slots: cl.cfg.Slots, Client: after.client.Sub(before.client), Valid: true}
	t.Server = after.server.Sub(before.server)
	secs := d.Seconds()
	t.OfferedCPS = float64(t.Client.Attempted) / secs
	t.CPS = float64(t.Client.Closed) / secs
	if cl.cfg.Keepalive {
		t.CPS = float64(t.Client.Established) / secs
	}
	t.RequestRate = float64(t.Client.Responses) / secs
	t.ResponseMbps = float64(t.Client.ResponseBytes) * 8 / secs / 1e6
	t.Errors = t.Client.Errors()
	t.Handshake = summarize(after.handshake.Sub(before.handshake))
	t.Response = summarize(after.response.Sub(before.response))
	t.DUTDrops = bench.DropsSince(before.drops, after.drops)
	switch {
	case asked > 0 && float64(t.Client.Attempted+t.Client.Busy) < (1-bench.PaceTolerance)*asked*secs:
		t.Valid, t.Invalid = false, fmt.Sprintf("the client opened %d of the %.0f connections asked: it cannot offer this rate", t.Client.Attempted, asked*secs)
	case t.Client.Attempted == 0 && t.Client.Requests == 0:
		t.Valid, t.Invalid = false, "nothing was sent"
	}
	return t
}
