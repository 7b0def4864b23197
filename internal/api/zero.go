// SPDX-License-Identifier: Apache-2.0

package api

import (
	"context"
	"net/http"
	"net/netip"

	"github.com/xlb-dev/xlb/internal/loadbalancer"
)

// ZeroRequest names the service whose counters to zero; empty fields
// zero every counter.
type ZeroRequest struct {
	Protocol string `json:"protocol,omitempty"`
	VIP      string `json:"vip,omitempty"`
	Port     int    `json:"port,omitempty"`
}

func (s *server) zeroCounters(w http.ResponseWriter, r *http.Request) {
	var req ZeroRequest
	if r.ContentLength != 0 {
		if err := decode(w, r, &req); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	var key *loadbalancer.ServiceKey
	if req != (ZeroRequest{}) {
		proto, err := loadbalancer.ParseProto(req.Protocol)
		if err != nil {
			s.fail(w, r, badRequest("protocol: %v", err))
			return
		}
		vip, err := netip.ParseAddr(req.VIP)
		if err != nil {
			s.fail(w, r, badRequest("vip: %q is not an IP address", req.VIP))
			return
		}
		if req.Port < 0 || req.Port > 65535 {
			s.fail(w, r, badRequest("port: %d is not a port", req.Port))
			return
		}
		key = &loadbalancer.ServiceKey{VIP: vip.Unmap(), Port: uint16(req.Port), Proto: proto}
	}
	if err := s.b.ZeroCounters(key); err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ApplyResult{Changed: true, Changes: []string{"counters zeroed"}})
}

// ZeroCounters zeroes the counters of the service proto vip:port, or
// every counter when proto is "" (ipvsadm -Z).
func (c *Client) ZeroCounters(ctx context.Context, proto, vip string, port int) error {
	var req any
	if proto != "" {
		req = ZeroRequest{Protocol: proto, VIP: vip, Port: port}
	}
	return c.send(ctx, http.MethodPost, "/v1/stats/zero", req, nil)
}
