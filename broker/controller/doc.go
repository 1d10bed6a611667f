// Package controller is the controller's pure state machine: broker
// registration and sessions, fencing, topic creation and replica assignment,
// leader election per the topic's policy, and ISR changes. It is the single
// writer of leadership and ISR.
//
// Like the broker core it reads no clock and does no I/O: Handle takes a
// request and the current time and returns the response; Tick expires
// sessions. The driver persists Snapshot whenever Version changes, before
// sending the responses of that step, so a restarted controller resumes from
// what it told anyone.
package controller
