//! A port's link with its deadline kept beside it.
//!
//! The endpoint asks for the earliest deadline of every port's link after each thing it does,
//! and most of those links have not changed since it last asked: a link's deadline is read again
//! only after a call that could change it. Every such call takes the link mutably, and the link
//! is only reachable mutably through [`PortLink::get_mut`], which forgets the deadline kept: what
//! is kept is always what the link would answer.
//!
//! It also knows whether a poll of the port could send anything: not once a poll found nothing
//! to send, until the link is next taken mutably or the endpoint queues a frame for the port
//! ([`PortLink::stir`]). An embedder with many ports polls only those
//! ([`crate::Endpoint::may_transmit`]), and a port's link state, cold in a large fabric, is not
//! read for nothing.

use core::cell::Cell;

use ethlink_link::{Instant, Link};

/// A link and, once asked for, its [`Link::poll_timeout`] as of its last change.
#[derive(Debug)]
pub(super) struct PortLink {
    link: Link,
    /// `Some(answer)` while the link is unchanged since `answer` was read.
    deadline: Cell<Option<Option<Instant>>>,
    /// False from a poll that found nothing to send until the link changes or a frame is queued
    /// for it.
    stirred: bool,
}

impl PortLink {
    pub(super) fn new(link: Link) -> Self {
        PortLink {
            link,
            deadline: Cell::new(None),
            stirred: true,
        }
    }

    /// The link, to read.
    pub(super) fn get(&self) -> &Link {
        &self.link
    }

    /// The link, to change: its deadline is read again the next time it is asked for.
    pub(super) fn get_mut(&mut self) -> &mut Link {
        self.deadline.set(None);
        self.stirred = true;
        &mut self.link
    }

    /// Something changed for the port outside its link (a frame queued for it): the next poll
    /// may send.
    pub(super) fn stir(&mut self) {
        self.stirred = true;
    }

    /// A poll of the port found nothing to send, and nothing has happened to it since.
    pub(super) fn settle(&mut self) {
        self.stirred = false;
    }

    /// Whether a poll could send anything: false only when nothing has happened to the port
    /// since a poll found nothing to send.
    pub(super) fn stirred(&self) -> bool {
        self.stirred
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
