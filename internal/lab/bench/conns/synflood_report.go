// SPDX-License-Identifier: Apache-2.0

package conns

import (
	"fmt"
	"io"
)

// floodPhase is the phase of a DUT, if it ran.
func (r *Report) floodPhase(dut, phase string) (SynFloodTrial, bool) {
	for _, t := range r.SynFlood {
		if t.DUT == dut && t.Phase == phase {
			return t, true
		}
	}
	return SynFloodTrial{}, false
}

// floodSYNsToReals are the flood's SYNs that reached a real in a phase:
// every SYN a real answered but the legitimate connections' one each
// (through a SYN proxy, those whose cookie came back; else every
// connection the client opened).
func floodSYNsToReals(t SynFloodTrial) int64 {
	legit := uint64(0)
	switch {
	case t.Proxy != nil:
		legit = t.Proxy.Valid
	case t.Legit != nil:
		legit = t.Legit.Client.Attempted
	}
	return int64(t.SYNsToReals) - int64(legit)
}

// perCoreRate is the rate of a DUT's own share of a core it shares with
// the generator: rate answered with the generator's ceiling taken out
// (0 when the DUT answered at the ceiling: its share is too small to
// tell).
func perCoreRate(answered, ceiling float64) float64 {
	if answered <= 0 || ceiling <= 0 || answered >= ceiling {
		return 0
	}
	return 1 / (1/answered - 1/ceiling)
}

// writeSynFlood writes the synflood scenario's tables and its goals.
func (r *Report) writeSynFlood(w io.Writer) {
	fmt.Fprintln(w, "## SYN flood: spoofed SYNs against a DUT, alone and with legitimate connections")
	fmt.Fprintf(w, "\nThe flood: TCP SYNs from %d spoofed sources (the generator, XDP live frames); legitimate connections: the XDP client at %.0f connections/s (SYN, SYN-ACK, ACK + %d-byte request, response, FIN). Everything on one core (CPU %d): on veth the DUT's work is done on the sending core. Each phase %v.\n\n",
		floodSources, r.Options.OpenRate, r.Options.PayloadSize, r.Options.CPUs[0], r.Options.Duration)
	ceiling, hasCeiling := r.floodPhase("sink", PhaseReflect)
	fmt.Fprintln(w, "### The flood alone, as fast as the generator sends")
	if sink, ok := r.floodPhase("sink", PhaseCeiling); ok && hasCeiling {
		fmt.Fprintf(w, "\nWithout a DUT, on the same core: the generator into an XDP sink on the balancer, %.0f SYNs/s; the sink sending every SYN back to the client as a DUT's answer goes (redirect to the ingress veth, the client's XDP endpoint, the client's kernel, which drops it), %.0f SYNs/s. A DUT works on the generator's core, so each answered SYN costs the generator's and the way back's share plus the DUT's own: \"per core\" is the rate of the DUT's own share, 1 / (1/answered - 1/%.0f).\n",
			sink.FloodPPS, ceiling.FloodPPS, ceiling.FloodPPS)
	}
	fmt.Fprintln(w, "\n| DUT | SYNs sent/s | answered with a cookie/s | answered per core (DUT's share) | flood SYNs that reached a real | DUT's table before -> after |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---|")
	for _, d := range r.Options.DUTs {
		t, ok := r.floodPhase(d, PhaseFlood)
		if !ok {
			continue
		}
		answered, perCore := "- (no SYN proxy)", "-"
		if t.Proxy != nil {
			answered = fmt.Sprintf("%.0f", t.AnsweredPPS)
			if c := perCoreRate(t.AnsweredPPS, ceiling.FloodPPS); hasCeiling && c > 0 {
				perCore = fmt.Sprintf("%.0f", c)
			}
		}
		fmt.Fprintf(w, "| %s | %.0f | %s | %s | %d | %d -> %d |\n", d, t.FloodPPS, answered, perCore, floodSYNsToReals(t), t.TableBefore, t.TableAfter)
	}
	fmt.Fprintln(w, "\n### Legitimate connections under the flood")
	fmt.Fprintln(w, "\n| DUT | alone: cps (errors) | flood at half the DUT's rate: pps, cps (errors), ratio | flood at the generator's rate: pps, cps (errors), ratio | flood SYNs to reals | table after the full flood |")
	fmt.Fprintln(w, "|---|---|---|---|---:|---:|")
	for _, d := range r.Options.DUTs {
		alone, ok := r.floodPhase(d, PhaseLegit)
		if !ok || alone.Legit == nil {
			continue
		}
		cells := []string{fmt.Sprintf("%.0f (%d)", alone.Legit.CPS, alone.Legit.Errors)}
		var toReals int64
		var table uint64
		for _, p := range []string{PhaseLegitHalf, PhaseLegitFull} {
			t, ok := r.floodPhase(d, p)
			if !ok || t.Legit == nil {
				cells = append(cells, "-")
				continue
			}
			ratio := "-"
			if alone.Legit.CPS > 0 {
				ratio = fmt.Sprintf("%.2fx", t.Legit.CPS/alone.Legit.CPS)
			}
			cells = append(cells, fmt.Sprintf("%.0f pps, %.0f (%d), %s", t.FloodPPS, t.Legit.CPS, t.Legit.Errors, ratio))
			toReals += floodSYNsToReals(t)
			table = t.TableAfter
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %d | %d |\n", d, cells[0], cells[1], cells[2], toReals, table)
	}
	r.writeSynFloodGoals(w)
}

// writeSynFloodGoals says how the run meets issue 26's goals.
func (r *Report) writeSynFloodGoals(w io.Writer) {
	fmt.Fprintln(w, "\n### Goals")
	xlb, okX := r.floodPhase("xlb-synproxy", PhaseFlood)
	nft, okN := r.floodPhase("nft-synproxy", PhaseFlood)
	if okX {
		var reals int64
		for _, p := range []string{PhaseFlood, PhaseLegitHalf, PhaseLegitFull} {
			if t, ok := r.floodPhase("xlb-synproxy", p); ok {
				reals += floodSYNsToReals(t)
			}
		}
		fmt.Fprintf(w, "\n- Spoofed SYNs that reached a real through xlb-synproxy (goal 0): %d.\n", reals)
		alone, ok1 := r.floodPhase("xlb-synproxy", PhaseLegit)
		half, ok2 := r.floodPhase("xlb-synproxy", PhaseLegitHalf)
		if ok1 && ok2 && alone.Legit != nil && half.Legit != nil && alone.Legit.CPS > 0 {
			fmt.Fprintf(w, "- Legitimate rate under the half-rate flood, xlb-synproxy (goal at least 0.90x without it): %.2fx.\n",
				half.Legit.CPS/alone.Legit.CPS)
		}
		fmt.Fprintf(w, "- xlb-synproxy's table after the flood alone: %d -> %d connections (goal: no growth).\n", xlb.TableBefore, xlb.TableAfter)
	}
	if okX && okN && nft.AnsweredPPS > 0 {
		fmt.Fprintf(w, "- Flood answered on the shared core, xlb-synproxy / nft-synproxy: %.0f / %.0f SYNs per second = %.2fx (a floor when xlb answered all the generator sent).\n",
			xlb.AnsweredPPS, nft.AnsweredPPS, xlb.AnsweredPPS/nft.AnsweredPPS)
		ceiling, ok := r.floodPhase("sink", PhaseReflect)
		x, n := perCoreRate(xlb.AnsweredPPS, ceiling.FloodPPS), perCoreRate(nft.AnsweredPPS, ceiling.FloodPPS)
		if ok && x > 0 && n > 0 {
			fmt.Fprintf(w, "- Flood absorbed per core, the DUT's share alone (goal at least 5x): %.0f / %.0f = %.2fx.\n", x, n, x/n)
		}
	}
}
