// SPDX-License-Identifier: Apache-2.0

package datapath

import (
	"fmt"
	"time"
)

// NewConnStages are where a new connection's time went, as a program
// loaded with Options.TimeStages measured it (bpf/lib/stages.h): each
// stage's mean over Conns connections. Every figure but Timer includes
// one reading of the clock, which Timer is.
type NewConnStages struct {
	Conns    uint64        // connections timed
	Lookup   time.Duration // parse, service, the forward probe that missed
	Timer    time.Duration // one reading of the clock
	Schedule time.Duration // scheduler and persistence
	FwdSlot  time.Duration // local IP, the forward entry's slot
	Port     time.Duration // local port, the reverse entry's slot
	Insert   time.Duration // both entries written, counters
	Send     time.Duration // NAT, checksums, route, redirect
}

// NewConnStages reads the stage sums since the last ResetStages as
// means per connection. It fails on a program loaded without
// Options.TimeStages.
func (d *Datapath) NewConnStages() (NewConnStages, error) {
	var sums [xlbXlbStageXLB_STAGE_MAX]uint64
	if err := d.stageSums(&sums); err != nil {
		return NewConnStages{}, err
	}
	st := NewConnStages{Conns: sums[xlbXlbStageXLB_STAGE_CONNS]}
	if st.Conns == 0 {
		return st, nil
	}
	mean := func(s xlbXlbStage) time.Duration { return time.Duration(sums[s] / st.Conns) }
	st.Lookup, st.Timer, st.Schedule = mean(xlbXlbStageXLB_STAGE_LOOKUP), mean(xlbXlbStageXLB_STAGE_TIMER), mean(xlbXlbStageXLB_STAGE_SCHEDULE)
	st.FwdSlot, st.Port = mean(xlbXlbStageXLB_STAGE_FWD_SLOT), mean(xlbXlbStageXLB_STAGE_PORT)
	st.Insert, st.Send = mean(xlbXlbStageXLB_STAGE_INSERT), mean(xlbXlbStageXLB_STAGE_SEND)
	return st, nil
}

// ResetStages zeroes the stage sums.
func (d *Datapath) ResetStages() error {
	var zero [xlbXlbStageXLB_STAGE_MAX]uint64
	if err := d.checkTimed(); err != nil {
		return err
	}
	return d.objs.XlbStageNs.Set(zero)
}

func (d *Datapath) stageSums(sums *[xlbXlbStageXLB_STAGE_MAX]uint64) error {
	if err := d.checkTimed(); err != nil {
		return err
	}
	if err := d.objs.XlbStageNs.Get(sums); err != nil {
		return fmt.Errorf("read xlb_stage_ns: %w", err)
	}
	return nil
}

// checkTimed refuses a program that times nothing.
func (d *Datapath) checkTimed() error {
	var on uint32
	if err := d.objs.XlbTimeStages.Get(&on); err != nil {
		return fmt.Errorf("read xlb_time_stages: %w", err)
	}
	if on == 0 {
		return fmt.Errorf("the data path was loaded without Options.TimeStages")
	}
	return nil
}
