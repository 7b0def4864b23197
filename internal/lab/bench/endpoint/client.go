// SPDX-License-Identifier: Apache-2.0

package endpoint

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/xlb-dev/xlb/internal/lab/xdpsend"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
	"github.com/xlb-dev/xlb/internal/workers"
)

// Job is what a run of the client's sender does with each slot it
// visits (enum ep_job of ep_client.bpf.c).
type Job uint8

const (
	// Open opens a connection in each slot it visits (a SYN).
	Open Job = iota
	// Tick sends the keepalive requests that are due and retransmits
	// what timed out.
	Tick
	// Close closes the idle keepalive connections.
	Close
)

// MaxSlots bounds the connection slots (24 bytes each).
const MaxSlots = 50_000_000

// SlotBytes is the client's memory per connection slot (its array of
// slots is preallocated).
const SlotBytes = uint64(unsafe.Sizeof(epClientEpConn{}))

// ClientConfig configures the client endpoint, as dperf's client side.
// A slot is one client address and port; the slots are the most
// connections open at once.
type ClientConfig struct {
	SrcMAC, DstMAC net.HardwareAddr // the client interface's and the next hop's
	Src            netip.Addr       // the first client address
	SrcPort        uint16           // the first client port
	Ports          int              // client ports per address
	Slots          int              // connection slots: addresses x ports
	Dst            netip.AddrPort   // the server (a VIP or a real)
	RequestSize    int              // request payload, bytes
	// Keepalive keeps connections open: the next request goes after
	// KeepaliveInterval (Tick sends it), or at once when that is 0
	// (back to back, until BackToBackUntil: see SetBackToBackUntil).
	Keepalive         bool
	KeepaliveInterval time.Duration
	RTO               time.Duration // retransmission timeout (default 200ms)
	MaxRetries        int           // retransmissions before a timeout (default 3)
	// ReceiveOn, when set, is the sender's CPU: every answer is
	// processed there (xdp_ep_client_steer), as it must when the DUT's
	// data path runs on worker CPUs, since a slot is touched by one CPU
	// only. One CPU: a sender each would need the slot's owner.
	ReceiveOn []int
}

func (c *ClientConfig) check() error {
	if c.RTO == 0 {
		c.RTO = 200 * time.Millisecond
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = 3
	}
	switch {
	case !c.Src.Is4() || !c.Dst.Addr().Is4():
		return fmt.Errorf("client %v to %v: the endpoints speak IPv4 only", c.Src, c.Dst)
	case len(c.SrcMAC) != 6 || len(c.DstMAC) != 6:
		return fmt.Errorf("MACs %v and %v: want Ethernet addresses", c.SrcMAC, c.DstMAC)
	case c.Ports < 1 || int(c.SrcPort)+c.Ports > 65536 || c.SrcPort == 0:
		return fmt.Errorf("client ports %d+%d: want a range within 1-65535", c.SrcPort, c.Ports)
	case c.Slots < 1 || c.Slots > MaxSlots:
		return fmt.Errorf("slots %d: want 1 to %d", c.Slots, MaxSlots)
	case c.RequestSize < 1 || c.RequestSize > MaxPayload:
		return fmt.Errorf("request size %d: want 1 to %d bytes", c.RequestSize, MaxPayload)
	case c.RTO < time.Millisecond || c.MaxRetries < 0 || c.MaxRetries > 255:
		return fmt.Errorf("RTO %v, %d retries: want at least 1ms and 0 to 255 retries", c.RTO, c.MaxRetries)
	case c.KeepaliveInterval < 0:
		return fmt.Errorf("keepalive interval %v: want 0 or more", c.KeepaliveInterval)
	case len(c.ReceiveOn) > 1:
		return fmt.Errorf("answers steered to CPUs %v: one sender's CPU at most", c.ReceiveOn)
	}
	last := c.Src.As4()
	n := uint32(last[0])<<24 | uint32(last[1])<<16 | uint32(last[2])<<8 | uint32(last[3])
	if uint64(n)+uint64((c.Slots-1)/c.Ports) > 0xffffffff {
		return fmt.Errorf("client addresses from %v: %d slots run past 255.255.255.255", c.Src, c.Slots)
	}
	return nil
}

// Addresses is how many client addresses the slots use.
func (c ClientConfig) Addresses() int { return (c.Slots + c.Ports - 1) / c.Ports }

// ClientStats are the client endpoint's counters, summed over CPUs.
type ClientStats struct {
	Attempted     uint64 `json:"attempted"`      // SYNs of new connections
	Established   uint64 `json:"established"`    // handshakes completed
	Closed        uint64 `json:"closed"`         // closes completed
	Requests      uint64 `json:"requests"`       // requests sent (without retransmissions)
	Responses     uint64 `json:"responses"`      // responses received
	RSTs          uint64 `json:"rsts"`           // RSTs received
	Timeouts      uint64 `json:"timeouts"`       // connections given up after the retries
	Retransmits   uint64 `json:"retransmits"`    // segments sent again
	Busy          uint64 `json:"busy"`           // opens that found their slot in use (none sent)
	Unexpected    uint64 `json:"unexpected"`     // segments that fit no connection's state
	ResponseBytes uint64 `json:"response_bytes"` // response payload bytes
}

// Errors is the count of connection errors of every kind.
func (s ClientStats) Errors() uint64 { return s.RSTs + s.Timeouts + s.Retransmits + s.Unexpected }

// Sub returns s minus an earlier reading.
func (s ClientStats) Sub(e ClientStats) ClientStats {
	return ClientStats{s.Attempted - e.Attempted, s.Established - e.Established, s.Closed - e.Closed,
		s.Requests - e.Requests, s.Responses - e.Responses, s.RSTs - e.RSTs, s.Timeouts - e.Timeouts,
		s.Retransmits - e.Retransmits, s.Busy - e.Busy, s.Unexpected - e.Unexpected, s.ResponseBytes - e.ResponseBytes}
}

// Client is the client endpoint: the answering program, attached to the
// client's interfaces, and the sender, run through BPF_PROG_RUN.
type Client struct {
	cfg   ClientConfig
	objs  epClientObjects
	links []link.Link
	frame []byte
	// where each CPU's sender left off, so that Open carries on
	// with fresh slots from one run to the next
	next    map[int]uint32
	cpus    string
	b2bStop uint64
}

// NewClient loads the client endpoint with a table of cfg.Slots slots.
func NewClient(cfg ClientConfig) (*Client, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	spec, err := loadEpClient()
	if err != nil {
		return nil, fmt.Errorf("client endpoint: %w", err)
	}
	spec.Maps["ep_conns"].MaxEntries = uint32(cfg.Slots)
	c := &Client{cfg: cfg, frame: make([]byte, 54+cfg.RequestSize), next: map[int]uint32{}}
	if len(cfg.ReceiveOn) > 0 {
		err = c.loadSteered(spec)
	} else {
		err = spec.LoadAndAssign(&c.objs, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("load client endpoint: %w", err)
	}
	if err := c.configure(Open); err != nil {
		c.objs.Close()
		return nil, err
	}
	return c, nil
}

func (c *Client) configure(job Job) error {
	cfg := c.cfg
	var k epClientEpClientCfg
	copy(k.First.Smac[:], cfg.SrcMAC)
	copy(k.First.Dmac[:], cfg.DstMAC)
	k.First.Saddr = be32(cfg.Src)
	k.First.Daddr = be32(cfg.Dst.Addr())
	k.First.Sport, k.First.Dport = be16(cfg.SrcPort), be16(cfg.Dst.Port())
	k.Slots, k.N_ports, k.RequestSize = uint32(cfg.Slots), uint16(cfg.Ports), uint16(cfg.RequestSize)
	k.KeepaliveNs, k.RtoNs = uint64(cfg.KeepaliveInterval), uint64(cfg.RTO)
	k.MaxRetries, k.Job = uint8(cfg.MaxRetries), uint8(job)
	k.B2bStopNs = c.b2bStop
	if cfg.Keepalive {
		k.Keepalive = 1
	}
	if err := c.objs.EpClientConfig.Set(k); err != nil {
		return fmt.Errorf("configure client endpoint: %w", err)
	}
	return nil
}

// StopBackToBackAfter lets back-to-back requests (keepalive with a 0
// interval: one request at a time, TCP_RR) go on for d from now, after
// which each connection goes idle: the ping-pong ends by itself.
func (c *Client) StopBackToBackAfter(d time.Duration) error {
	now, err := xdpsend.MonotonicNow()
	if err != nil {
		return err
	}
	c.b2bStop = now + uint64(d)
	return c.configure(Open)
}

// be32 is an IPv4 address as the program reads a __be32 (little-endian
// load of network-order bytes).
func be32(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func be16(p uint16) uint16 { return p>>8 | p<<8 }

// loadSteered loads the client with xdp_ep_client_worker as the
// cpumap program of the sender's CPU (ClientConfig.ReceiveOn).
func (c *Client) loadSteered(spec *ebpf.CollectionSpec) error {
	possible, err := ebpf.PossibleCPU()
	if err != nil {
		return err
	}
	if err := workers.Prepare(spec, epClientProgXdpEpClientWorker, "xdp_ep_client_w", possible); err != nil {
		return err
	}
	var objs struct {
		epClientObjects
		Worker *ebpf.Program `ebpf:"xdp_ep_client_w"`
	}
	if err := spec.LoadAndAssign(&objs, nil); err != nil {
		return err
	}
	c.objs = objs.epClientObjects
	err = workers.Start(c.objs.SteerCpus, c.objs.SteerWorkers, loadbalancer.Workers{CPUs: c.cfg.ReceiveOn}, objs.Worker)
	objs.Worker.Close()
	if err != nil {
		c.objs.Close()
	}
	return err
}

// Attach attaches the answering program to ifname in namespace ns
// (the steering program with ClientConfig.ReceiveOn).
func (c *Client) Attach(ns, ifname string) error {
	prog := c.objs.XdpEpClient
	if len(c.cfg.ReceiveOn) > 0 {
		prog = c.objs.XdpEpClientSteer
	}
	l, err := attach(prog, ns, ifname)
	if err != nil {
		return fmt.Errorf("client endpoint: %w", err)
	}
	c.links = append(c.links, l)
	return nil
}

// RunOptions say where the sender sends and how many slots it visits.
type RunOptions struct {
	Namespace, Interface string
	Rate                 float64       // visits per second; 0: as fast as it goes
	Visits               uint64        // visits at most; 0: Rate x Duration (paced) or no limit
	Duration             time.Duration // how long at most
	CPUs                 []int         // one sender each, each over its own share of the slots
}

// Run runs the sender doing job over the slots. Open visits each slot
// once per turn of the table (a slot still in use is counted as busy);
// Tick and Close visit every slot of their turn.
func (c *Client) Run(ctx context.Context, job Job, o RunOptions) error {
	if len(o.CPUs) == 0 {
		o.CPUs = []int{0}
	}
	if len(o.CPUs) > c.cfg.Slots {
		return fmt.Errorf("%d senders for %d slots: want a slot each at least", len(o.CPUs), c.cfg.Slots)
	}
	if err := c.configure(job); err != nil {
		return err
	}
	so := xdpsend.Options{Namespace: o.Namespace, Interface: o.Interface, Rate: o.Rate, Budget: o.Visits,
		Duration: o.Duration, CPUs: o.CPUs, Frame: c.frame}
	plan, err := xdpsend.Plan(so)
	if err != nil {
		return err
	}
	if key := fmt.Sprint(o.CPUs); key != c.cpus {
		c.cpus, c.next = key, map[int]uint32{}
	}
	senders := make([]epClientEpSender, len(plan))
	for i := range plan {
		if err := plan[i].Into(&senders[i].Pace); err != nil {
			return err
		}
	}
	for i, cpu := range o.CPUs {
		s := &senders[cpu]
		s.Lo = uint32(c.cfg.Slots * i / len(o.CPUs))
		s.Hi = uint32(c.cfg.Slots * (i + 1) / len(o.CPUs))
		s.Next = s.Lo
		if n, ok := c.next[cpu]; ok && job == Open {
			s.Next = n
		}
	}
	if err := c.objs.EpSenders.Put(uint32(0), senders); err != nil {
		return fmt.Errorf("set up client senders: %w", err)
	}
	_, err = xdpsend.Run(ctx, c.objs.XdpEpSend, so, func(cpu int) (bool, error) {
		var per []epClientEpSender
		if err := c.objs.EpSenders.Lookup(uint32(0), &per); err != nil {
			return false, fmt.Errorf("read client senders: %w", err)
		}
		if job == Open {
			c.next[cpu] = per[cpu].Next
		}
		return per[cpu].Pace.Stopped != 0, nil
	})
	return err
}

// Stats sums the client's counters over CPUs.
func (c *Client) Stats() (ClientStats, error) {
	var per []epClientEpClientStats
	if err := c.objs.EpClientStats.Lookup(uint32(0), &per); err != nil {
		return ClientStats{}, fmt.Errorf("read client endpoint counters: %w", err)
	}
	var t ClientStats
	for _, p := range per {
		t = ClientStats{t.Attempted + p.Attempted, t.Established + p.Established, t.Closed + p.Closed,
			t.Requests + p.Requests, t.Responses + p.Responses, t.RSTs + p.Rsts, t.Timeouts + p.Timeouts,
			t.Retransmits + p.Retransmits, t.Busy + p.Busy, t.Unexpected + p.Unexpected, t.ResponseBytes + p.ResponseBytes}
	}
	return t, nil
}

// HistogramKind names the client's histograms.
type HistogramKind uint32

const (
	// Handshake is SYN to SYN-ACK.
	Handshake HistogramKind = iota
	// Response is request to response.
	Response
)

// Histogram returns one of the client's histograms, summed over CPUs.
func (c *Client) Histogram(kind HistogramKind) (Histogram, error) {
	var per []epClientEpHist
	if err := c.objs.EpHists.Lookup(uint32(kind), &per); err != nil {
		return Histogram{}, fmt.Errorf("read client histogram %d: %w", kind, err)
	}
	h := Histogram{Counts: make([]uint64, histBuckets)}
	for _, p := range per {
		for b, n := range p.Count {
			h.Counts[b] += n
		}
	}
	return h, nil
}

// Conns returns how many slots hold a connection in each state (FREE,
// SYN_SENT, REQ_SENT, IDLE, FIN_SENT), read in batches.
func (c *Client) Conns() ([5]uint64, error) {
	var out [5]uint64
	keys := make([]uint32, 4096)
	vals := make([]epClientEpConn, 4096)
	var cursor ebpf.MapBatchCursor
	for {
		n, err := c.objs.EpConns.BatchLookup(&cursor, keys, vals, nil)
		for _, v := range vals[:n] {
			if int(v.State) < len(out) {
				out[v.State]++
			}
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("read client slots: %w", err)
		}
	}
}

// Close detaches the client and releases it.
func (c *Client) Close() error {
	var errs []error
	for _, l := range c.links {
		errs = append(errs, l.Close())
	}
	c.links = nil
	errs = append(errs, c.objs.Close())
	return errors.Join(errs...)
}
