// SPDX-License-Identifier: Apache-2.0

package config

import (
	"errors"
	"strings"
)

// ValidationError lists every problem Validate found in a configuration.
// Each problem starts with the path of the field at fault, as in
// `services[1].reals[0].address: "10.0.0.300" is not an IP address`.
// errors.Is tells the named kinds of problem apart (ErrCapacity,
// ErrHostAddress, ErrAddressIsVIP, ErrUnusableAddress, ErrOutOfRange).
type ValidationError struct {
	Problems []string
	// kinds are the named errors of the problems that have one.
	kinds []error
}

// Error returns the problems, one per line.
func (e *ValidationError) Error() string { return strings.Join(e.Problems, "\n") }

// Unwrap returns the named kinds of the problems, for errors.Is.
func (e *ValidationError) Unwrap() []error { return e.kinds }

// The named kinds of validation problem.
var (
	// ErrCapacity: the configuration holds more than the data path's
	// maps can (services, VIPs, reals, local IPs, a schedule table).
	ErrCapacity = errors.New("over the data path's capacity")
	// ErrHostAddress: a VIP is an address the host had before xlb, and
	// the service does not say host_address: true; or a local IP is.
	ErrHostAddress = errors.New("a VIP or local IP is an address of the host")
	// ErrAddressIsVIP: a real or a local IP is some service's VIP.
	ErrAddressIsVIP = errors.New("an address is a VIP")
	// ErrUnusableAddress: an address that cannot serve its role
	// (loopback, broadcast, multicast, unspecified; link-local VIPs).
	ErrUnusableAddress = errors.New("an address that cannot be used there")
	// ErrOutOfRange: a number or a duration out of its bounds.
	ErrOutOfRange = errors.New("a value out of range")
)

// Problem returns a *ValidationError of one problem of a named kind (nil
// for none), for checks made outside this package: the problem is "path:
// " and the formatted text.
func Problem(kind error, path, format string, args ...any) *ValidationError {
	ch := &checker{}
	if kind == nil {
		ch.addf(path, format, args...)
	} else {
		ch.kindf(kind, path, format, args...)
	}
	return ch.err().(*ValidationError)
}
