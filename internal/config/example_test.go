// SPDX-License-Identifier: Apache-2.0

package config_test

import (
	"errors"
	"fmt"

	"github.com/xlb-dev/xlb/internal/config"
)

// Parse checks the syntax and the keys; Validate checks the values and
// reports every problem with the path of its field.
func Example() {
	c, err := config.Parse([]byte(`
interfaces: [eth0]
services:
  - vip: 10.0.0.1
    port: 80
    protocol: tcp
    local_ips: [10.0.2.254]
    reals:
      - {address: 10.0.0.300, port: 8080}
      - {address: "2001:db8::1", port: 8080, weight: 70000}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	err = c.Validate()
	var ve *config.ValidationError
	if errors.As(err, &ve) {
		fmt.Println(len(ve.Problems), "problems:")
	}
	fmt.Println(err)
	// Output:
	// 3 problems:
	// services[0].reals[0].address: "10.0.0.300" is not an IP address
	// services[0].reals[1].address: 2001:db8::1 is IPv6 but the VIP 10.0.0.1 is IPv4
	// services[0].reals[1].weight: 70000 is out of range (want 0 to 65535; 0 drains)
}

// An unknown key is a parse error that names the key and its line.
func ExampleParse() {
	_, err := config.Parse([]byte("interfaces: [eth0]\nservces: []\n"))
	fmt.Println(err)
	// Output:
	// parse configuration: line 2: unknown key "servces" at the top level
}
