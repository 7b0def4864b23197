// SPDX-License-Identifier: Apache-2.0

package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/xlb-dev/xlb/internal/api"
	"github.com/xlb-dev/xlb/internal/loadbalancer"
	"github.com/xlb-dev/xlb/internal/web"
)

// counterSource is where the collector reads: the daemon.
type counterSource interface {
	Status() ([]loadbalancer.ServiceStatus, error)
	Stats() (api.Stats, error)
	nodeSource
}

// collector reads the data path's counters at every scrape: nothing is
// copied between scrapes, so the figures are the maps' own.
type collector struct {
	d counterSource

	svcPackets, svcBytes, svcConns               *prometheus.Desc
	svcNoLport, localIPNoLport                   *prometheus.Desc
	svcRealsTaking                               *prometheus.Desc
	realPackets, realBytes, realConns            *prometheus.Desc
	realActive, realInactive, realWeight         *prometheus.Desc
	realUp                                       *prometheus.Desc
	realResolved                                 *prometheus.Desc
	drops, verdicts, up, scrapeErrors            *prometheus.Desc
	redirectTxFailed, redirectErrors, icmpTooBig *prometheus.Desc
	events                                       *prometheus.Desc
	conntable                                    connTableMetrics
	node                                         nodeMetrics
}

var (
	svcLabels  = []string{"vip", "port", "protocol"}
	realLabels = []string{"vip", "port", "protocol", "real", "real_port"}
)

func newCollector(d counterSource) *collector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("xlb_"+name, help, labels, nil)
	}
	dir := func(l []string) []string { return append(append([]string{}, l...), "direction") }
	return &collector{
		d:          d,
		svcPackets: desc("service_packets_total", "Packets of a service, direction in (client to real) or out.", dir(svcLabels)...),
		svcBytes:   desc("service_bytes_total", "Bytes of a service by direction.", dir(svcLabels)...),
		svcConns:   desc("service_connections_total", "Connections a service scheduled.", svcLabels...),
		svcRealsTaking: desc("service_reals_taking_connections",
			"Reals of a service that take new connections: up (or unchecked), next hop resolved, weight above 0. 0: its new connections are dropped (no_real).", svcLabels...),
		svcNoLport: desc("service_no_lport_total",
			"New connections of a service dropped as no_lport: every local port tried was held.", svcLabels...),
		localIPNoLport: desc("local_ip_no_lport_total",
			"New connections dropped as no_lport because every port of this local IP they tried was held.", "local_ip"),
		realPackets:  desc("real_packets_total", "Packets of a real by direction.", dir(realLabels)...),
		realBytes:    desc("real_bytes_total", "Bytes of a real by direction.", dir(realLabels)...),
		realConns:    desc("real_connections_total", "Connections scheduled to a real.", realLabels...),
		realActive:   desc("real_active_connections", "Established connections of a real (ipvsadm ActiveConn).", realLabels...),
		realInactive: desc("real_inactive_connections", "Other live connections of a real (ipvsadm InActConn).", realLabels...),
		realWeight:   desc("real_weight", "Weight of a real; 0 drains it.", realLabels...),
		realUp:       desc("real_up", "Health of a checked real: 1 up, 0 down (taken out of scheduling).", realLabels...),
		realResolved: desc("real_next_hop_resolved", "1 when the real's next hop is resolved, 0 while it is not (no new connections go to the real).", realLabels...),
		drops:        desc("drops_total", "Packets the data path dropped, by reason.", "reason"),
		verdicts:     desc("xdp_verdicts_total", "Packets by final XDP action.", "verdict"),
		up:           desc("up", "1 when the daemon reads its data path."),
		scrapeErrors: desc("scrape_errors", "1 when this scrape could not read some counters."),
		redirectTxFailed: desc("redirect_tx_failed_total",
			"Redirected frames the target driver refused at the devmap flush, lost silently (e.g. a veth whose peer has no XDP program and GRO off, kernels before 6.3)."),
		redirectErrors: desc("redirect_errors_total",
			"Redirects the kernel refused at once, lost silently (e.g. into a veth whose peer has no XDP program and GRO off, kernel 6.3+)."),
		icmpTooBig: desc("icmp_too_big_sent_total",
			"ICMP fragmentation-needed / Packet Too Big errors sent for packets above the egress MTU."),
		events: desc("events_total",
			"What the data path did besides forwarding: icmp_too_big, toa_added, toa_no_room (a TOA not added: the options were full), proxy_header_sent (again for a retransmitted first segment), mss_lowered.", "event"),
		conntable: newConnTableMetrics(),
		node:      newNodeMetrics(),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.svcPackets, c.svcBytes, c.svcConns, c.svcNoLport, c.svcRealsTaking, c.localIPNoLport, c.realPackets, c.realBytes,
		c.realConns, c.realActive, c.realInactive, c.realWeight, c.realUp, c.realResolved, c.drops, c.verdicts, c.up, c.scrapeErrors,
		c.redirectTxFailed, c.redirectErrors, c.icmpTooBig, c.events} {
		ch <- d
	}
	c.conntable.describe(ch)
	c.node.describe(ch)
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	failed := 0.0
	st, err := c.d.Status()
	if err != nil {
		failed = 1
	}
	for _, s := range st {
		sl := []string{s.Key.VIP.String(), strconv.Itoa(int(s.Key.Port)), s.Key.Proto.String()}
		counter(c.svcPackets, s.Stats.InPackets, append(sl, "in")...)
		counter(c.svcPackets, s.Stats.OutPackets, append(sl, "out")...)
		counter(c.svcBytes, s.Stats.InBytes, append(sl, "in")...)
		counter(c.svcBytes, s.Stats.OutBytes, append(sl, "out")...)
		counter(c.svcConns, s.Stats.Conns, sl...)
		counter(c.svcNoLport, s.NoLport, sl...)
		taking := 0
		for _, r := range s.Reals {
			if r.TakesConnections() {
				taking++
			}
		}
		gauge(c.svcRealsTaking, float64(taking), sl...)
		for _, r := range s.Reals {
			rl := append(append([]string{}, sl...), r.Addr.String(), strconv.Itoa(int(r.Port)))
			counter(c.realPackets, r.Stats.InPackets, append(rl, "in")...)
			counter(c.realPackets, r.Stats.OutPackets, append(rl, "out")...)
			counter(c.realBytes, r.Stats.InBytes, append(rl, "in")...)
			counter(c.realBytes, r.Stats.OutBytes, append(rl, "out")...)
			counter(c.realConns, r.Stats.Conns, rl...)
			gauge(c.realActive, float64(r.ActiveConns), rl...)
			gauge(c.realInactive, float64(r.InactiveConns), rl...)
			gauge(c.realWeight, float64(r.Weight), rl...)
			if r.Health != "" {
				gauge(c.realUp, map[bool]float64{true: 0, false: 1}[r.Down], rl...)
			}
			gauge(c.realResolved, map[bool]float64{true: 0, false: 1}[r.Unresolved], rl...)
		}
	}
	stats, err := c.d.Stats()
	if err != nil {
		failed = 1
	} else {
		counter(c.redirectTxFailed, stats.RedirectTxFailed)
		counter(c.redirectErrors, stats.RedirectErrors)
		counter(c.icmpTooBig, stats.ICMPTooBigSent)
		for name, n := range stats.Events {
			counter(c.events, n, name)
		}
		c.conntable.collect(ch, stats.ConnTables)
		for _, l := range stats.LocalIPs {
			counter(c.localIPNoLport, l.NoLport, l.Address.String())
		}
	}
	for reason, n := range stats.Drops {
		counter(c.drops, n, reason)
	}
	for verdict, n := range stats.Verdicts {
		counter(c.verdicts, n, verdict)
	}
	c.node.collect(ch, c.d.Node())
	gauge(c.up, 1-failed)
	gauge(c.scrapeErrors, failed)
}

// serveMetrics serves /metrics on addr.
func (d *Daemon) serveMetrics(addr string) (*http.Server, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(d), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return d.serveTCP("metrics", addr, mux)
}

// serveWeb serves the live page on addr (web.go): read-only, no login,
// so on a loopback or management address.
func (d *Daemon) serveWeb(addr string) (*http.Server, error) {
	return d.serveTCP("web page", addr, web.Handler(api.Handler(d, d.opts.Version, d.log)))
}

// serveTCP serves h on the TCP address addr until the server is closed.
func (d *Daemon) serveTCP(what, addr string, h http.Handler) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &ConfigError{fmt.Errorf("%s address %s: %w", what, addr, err)}
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			d.log.Error(what+" server", "err", err)
		}
	}()
	d.log.Info("serving the "+what, "address", ln.Addr().String())
	return srv, nil
}
