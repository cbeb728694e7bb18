//! A port's link with its deadline kept beside it.
//!
//! The endpoint asks for the earliest deadline of every port's link after each thing it does,
//! and most of those links have not changed since it last asked: a link's deadline is read again
//! only after a call that could change it. Every such call takes the link mutably, and the link
//! is only reachable mutably through [`PortLink::get_mut`], which forgets the deadline kept: what
//! is kept is always what the link would answer.

use core::cell::Cell;

use ethlink_link::{Instant, Link};

/// A link and, once asked for, its [`Link::poll_timeout`] as of its last change.
#[derive(Debug)]
pub(super) struct PortLink {
    link: Link,
    /// `Some(answer)` while the link is unchanged since `answer` was read.
    deadline: Cell<Option<Option<Instant>>>,
}

impl PortLink {
    pub(super) fn new(link: Link) -> Self {
        PortLink {
            link,
            deadline: Cell::new(None),
        }
    }

    /// The link, to read.
    pub(super) fn get(&self) -> &Link {
        &self.link
    }

    /// The link, to change: its deadline is read again the next time it is asked for.
    pub(super) fn get_mut(&mut self) -> &mut Link {
        self.deadline.set(None);
        &mut self.link
    }

    /// The link's [`Link::poll_timeout`].
    pub(super) fn poll_timeout(&self) -> Option<Instant> {
        if let Some(d) = self.deadline.get() {
            return d;
        }
        let d = self.link.poll_timeout();
        self.deadline.set(Some(d));
        d
    }
}

#[cfg(test)]
mod tests {
    use super::PortLink;
    use ethlink_link::{Config, Instant, Link};

    /// What is kept is what the link answers, through changes made by way of `get_mut`.
    #[test]
    fn the_kept_deadline_is_the_links() {
        let mut p = PortLink::new(Link::new(Config::default()).unwrap());
        assert_eq!(p.poll_timeout(), None);
        let t0 = Instant::from_nanos(10);
        p.get_mut().physical_up(t0);
        // An INIT is due at once.
        assert_eq!(p.poll_timeout(), Some(t0));
        // Sent: the next is due when the retry interval has passed.
        let mut buf = [0u8; 256];
        assert!(p.get_mut().poll_transmit(t0, &mut buf).unwrap().is_some());
        let next = p.poll_timeout();
        assert_eq!(next, p.get().poll_timeout());
        assert!(next.is_some_and(|t| t > t0));
        p.get_mut().physical_down(t0);
        assert_eq!(p.poll_timeout(), p.get().poll_timeout());
        assert_eq!(p.poll_timeout(), None);
    }
}
