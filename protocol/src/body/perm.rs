//! Permission bits (`PermName`).

pub const PRIORITY: i32 = 8;
pub const READ: i32 = 4;
pub const WRITE: i32 = 2;
pub const INHERIT: i32 = 1;

pub fn is_writeable(perm: i32) -> bool {
    perm & WRITE == WRITE
}

/// Read, write and inherit as `RWX`, `-` for each one off (`6` is `RW-`), as the status
/// page and `admin status` show a queue's permission.
pub fn text(perm: i32) -> String {
    [(READ, 'R'), (WRITE, 'W'), (INHERIT, 'X')]
        .iter()
        .map(|&(bit, c)| if perm & bit != 0 { c } else { '-' })
        .collect()
}
