// SPDX-License-Identifier: Apache-2.0

// Package apply moves a data path from one configuration to another: the
// changes in an order that never leaves a service without what it refers
// to, and a roll back to where it started when a step fails, so that a
// configuration is applied whole or not at all. The daemon applies every
// file, reload and API edit through it; the API's test server does the
// same over an in-memory data path (applytest), so both follow one set of
// rules.
package apply
