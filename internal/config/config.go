// SPDX-License-Identifier: Apache-2.0

package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"gopkg.in/yaml.v3"
)

// Config is a parsed configuration file, not yet validated.
type Config struct {
	Interfaces     []string  `yaml:"interfaces" json:"interfaces"`
	XDPMode        string    `yaml:"xdp_mode,omitempty" json:"xdp_mode,omitempty"`
	Timeouts       *Timeouts `yaml:"timeouts,omitempty" json:"timeouts,omitempty"`
	LocalPortRange string    `yaml:"local_port_range,omitempty" json:"local_port_range,omitempty"`
	Services       []Service `yaml:"services" json:"services"`
}

// Timeouts are connection timeouts in seconds, as `ipvsadm --set tcp
// tcpfin udp`; zero keeps the default.
type Timeouts struct {
	TCP    int `yaml:"tcp,omitempty" json:"tcp,omitempty"`
	TCPFin int `yaml:"tcp_fin,omitempty" json:"tcp_fin,omitempty"`
	UDP    int `yaml:"udp,omitempty" json:"udp,omitempty"`
}

// Service is a virtual service.
type Service struct {
	Name      string   `yaml:"name,omitempty" json:"name,omitempty"`
	VIP       string   `yaml:"vip" json:"vip"`
	Port      int      `yaml:"port" json:"port"`
	Protocol  string   `yaml:"protocol" json:"protocol"`
	Scheduler string   `yaml:"scheduler,omitempty" json:"scheduler,omitempty"`
	Mode      string   `yaml:"mode,omitempty" json:"mode,omitempty"`
	LocalIPs  []string `yaml:"local_ips,omitempty" json:"local_ips,omitempty"`
	Reals     []Real   `yaml:"reals,omitempty" json:"reals,omitempty"`
}

// Real is a real server of a service. Weight defaults to 1; 0 drains.
type Real struct {
	Address string `yaml:"address" json:"address"`
	Port    int    `yaml:"port" json:"port"`
	Weight  *int   `yaml:"weight,omitempty" json:"weight,omitempty"`
}

// Parse reads a configuration strictly: unknown keys are errors.
func Parse(data []byte) (*Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("configuration is empty")
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var c Config
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("configuration: more than one YAML document")
	}
	return &c, nil
}

// Load reads, parses and validates a configuration file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read configuration: %w", err)
	}
	c, err := Parse(data)
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// Clone returns a deep copy.
func (c *Config) Clone() *Config {
	if c == nil {
		return &Config{}
	}
	out := *c
	out.Interfaces = slices.Clone(c.Interfaces)
	if c.Timeouts != nil {
		t := *c.Timeouts
		out.Timeouts = &t
	}
	out.Services = make([]Service, len(c.Services))
	for i, s := range c.Services {
		s.LocalIPs = slices.Clone(s.LocalIPs)
		reals := make([]Real, len(s.Reals))
		for j, r := range s.Reals {
			if r.Weight != nil {
				w := *r.Weight
				r.Weight = &w
			}
			reals[j] = r
		}
		s.Reals = reals
		out.Services[i] = s
	}
	return &out
}

// Marshal writes the configuration as YAML.
func (c *Config) Marshal() ([]byte, error) {
	return yaml.Marshal(c)
}
