// SPDX-License-Identifier: Apache-2.0

package traffic

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/xlb-dev/xlb/internal/lab/xdpsend"
)

// Vary is the set of fields that change from flow to flow.
type Vary uint32

// The fields a flow varies (enum gen_vary of bpf/bench/gen.bpf.c).
const (
	VarySrcMAC Vary = 1 << iota
	VaryDstMAC
	VarySrcIP
	VaryDstIP
	VarySrcPort
	VaryDstPort
)

// MaxFlows is the most flows the generator rotates through: client
// addresses (or MACs) counted up from the frame's, 16M of them.
const MaxFlows = 1 << 24

// ParseVary reads a VSPERF multi-flow variation: LAYER-WHICH with LAYER
// l2, l3 or l4 and WHICH src, dst or both (l4-src: source ports).
func ParseVary(s string) (Vary, error) {
	layer, which, _ := strings.Cut(s, "-")
	fields := map[string][2]Vary{"l2": {VarySrcMAC, VaryDstMAC}, "l3": {VarySrcIP, VaryDstIP}, "l4": {VarySrcPort, VaryDstPort}}[layer]
	switch {
	case fields[0] == 0:
	case which == "src":
		return fields[0], nil
	case which == "dst":
		return fields[1], nil
	case which == "both":
		return fields[0] | fields[1], nil
	}
	return 0, fmt.Errorf("flow variation %q: want l2, l3 or l4, then -src, -dst or -both", s)
}

// Generator sends frames with XDP_TX from an XDP program run through
// BPF_PROG_RUN in live-frames mode, one sender per CPU.
type Generator struct {
	objs genObjects
	tmpl template
}

// NewGenerator loads the generator program.
func NewGenerator() (*Generator, error) {
	g := &Generator{}
	if err := loadGenObjects(&g.objs, nil); err != nil {
		return nil, fmt.Errorf("load generator: %w", err)
	}
	return g, nil
}

// Close releases the program.
func (g *Generator) Close() error { return g.objs.Close() }

// Configure sets the frame the flows start from, how many flows there
// are and which fields vary between them.
func (g *Generator) Configure(f Frame, flows int, vary Vary) error {
	if flows < 1 || flows > MaxFlows {
		return fmt.Errorf("flows %d: want 1 to %d", flows, MaxFlows)
	}
	if vary&(VarySrcPort|VaryDstPort) != 0 && flows > 65536 {
		return fmt.Errorf("flows %d: ports give at most 65536", flows)
	}
	asked, imix := f.Size, f.Size == IMIX
	if imix {
		// the live frame is the largest; each run sets the length
		f.Size = IMIXSizes[len(IMIXSizes)-1]
	}
	t, err := f.build()
	if err != nil {
		return err
	}
	cfg := genGenCfg{Flows: uint32(flows), Vary: uint32(vary), IpOff: uint16(t.ipOff), L4Off: uint16(t.l4Off)}
	cfg.HdrLen = uint16(min(len(t.data), maxTemplateHdr) &^ 7)
	if f.Stamp {
		// the send time's 8 bytes follow the magic, inside the
		// template the generator restores (zeros there)
		off := t.payloadOff + 4
		smallest := len(t.data)
		if imix {
			smallest = IMIXSizes[0] - FCS
		}
		if off+8 > min(smallest, maxTemplateHdr) {
			return fmt.Errorf("frame size %s: too small for %s over IPv%d to carry a send time", SizeName(asked), f.L4, map[bool]int{false: 4, true: 6}[t.ipv6])
		}
		cfg.Stamp, cfg.StampOff = 1, uint16(off)
	}
	if imix {
		cfg.ImixOn = 1
		for i, size := range IMIXSizes {
			f.Size = size
			st, err := f.build()
			if err != nil {
				return fmt.Errorf("IMIX %d-byte frame: %w", size, err)
			}
			cfg.Imix[i].Len = uint16(len(st.data))
			cfg.Imix[i].HdrLen = uint16(min(len(st.data), maxTemplateHdr) &^ 7)
			copy(cfg.Imix[i].Hdr[:], st.data)
		}
	}
	if t.ipv6 {
		cfg.Ipv6 = 1
	}
	// An IPv4 UDP checksum of 0 means "none": it must stay 0.
	if !(f.L4 == UDP && !t.ipv6 && t.data[t.csumOff] == 0 && t.data[t.csumOff+1] == 0) {
		cfg.L4CsumOff = uint16(t.csumOff)
	}
	copy(cfg.Hdr[:], t.data)
	if err := g.objs.GenConfig.Set(cfg); err != nil {
		return fmt.Errorf("configure generator: %w", err)
	}
	g.tmpl = t
	return nil
}

// Sent returns what the generator sent in the last Send.
func (g *Generator) Sent() (packets, bytes uint64, err error) {
	per, err := g.states()
	for _, s := range per {
		packets += s.Sent.Packets
		bytes += s.Sent.Bytes
	}
	return packets, bytes, err
}

func (g *Generator) states() ([]genGenState, error) {
	var per []genGenState
	if err := g.objs.GenStates.Lookup(uint32(0), &per); err != nil {
		return nil, fmt.Errorf("read generator state: %w", err)
	}
	return per, nil
}

// SendOptions say where, how fast and how long the generator sends.
type SendOptions struct {
	Namespace string        // network namespace of the sending interface
	Interface string        // the sending interface
	Rate      float64       // frames per second over all senders; 0 = as fast as they can
	Duration  time.Duration // how long
	CPUs      []int         // one sender per CPU (default CPU 0)
}

// Send runs the senders for the duration (or until ctx ends) and
// returns how long they took. Paced, each sender sends exactly its share
// of Rate x Duration frames, evenly spaced by the program itself.
func (g *Generator) Send(ctx context.Context, o SendOptions) (time.Duration, error) {
	if g.tmpl.data == nil {
		return 0, errors.New("generator not configured")
	}
	so := xdpsend.Options{Namespace: o.Namespace, Interface: o.Interface, Rate: o.Rate, Duration: o.Duration,
		CPUs: o.CPUs, Frame: g.tmpl.data}
	plan, err := xdpsend.Plan(so)
	if err != nil {
		return 0, err
	}
	states := make([]genGenState, len(plan))
	for i := range plan {
		if err := plan[i].Into(&states[i].Pace); err != nil {
			return 0, err
		}
	}
	if err := g.objs.GenStates.Put(uint32(0), states); err != nil {
		return 0, fmt.Errorf("set up senders: %w", err)
	}
	return xdpsend.Run(ctx, g.objs.XdpGen, so, func(cpu int) (bool, error) {
		per, err := g.states()
		if err != nil {
			return false, err
		}
		return per[cpu].Pace.Stopped != 0, nil
	})
}
