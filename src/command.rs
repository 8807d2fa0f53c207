//! Which of this module's commands a call is: the name every layer above knows it by.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Throttle,
    Fixed,
    Window,
    All,
    Lease,
    Release,
    Holders,
    Smooth,
    Top,
    Ban,
    Unban,
}

impl Command {
    /// Every command, in the order INFO shows them.
    pub const ALL: [Command; 11] = [
        Command::Throttle,
        Command::Fixed,
        Command::Window,
        Command::All,
        Command::Lease,
        Command::Release,
        Command::Holders,
        Command::Smooth,
        Command::Top,
        Command::Ban,
        Command::Unban,
    ];

    /// The name as the server knows it, and as its errors quote it.
    pub const fn name(self) -> &'static str {
        match self {
            Command::Throttle => "cl.throttle",
            Command::Fixed => "cl.fixed",
            Command::Window => "cl.window",
            Command::All => "cl.all",
            Command::Lease => "cl.lease",
            Command::Release => "cl.release",
            Command::Holders => "cl.holders",
            Command::Smooth => "cl.smooth",
            Command::Top => "cl.top",
            Command::Ban => "cl.ban",
            Command::Unban => "cl.unban",
        }
    }
}
