//! Agent clients lock by themselves: one hook call of a client onto the same protocol calls as
//! the command line.

pub mod act;
mod gitcmd;
pub mod trail;
