//! The surfaces added after the first hostile suite (issue 21), one module each: every case is
//! a regression test of a hole an independent hostile suite found, over TCP or HTTP against the
//! running server, and checks the class of the hole as well as the case.

mod config_store;
