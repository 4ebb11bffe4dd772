//! What one connection's user allowed for the rest of the session, and the questions put to
//! its client that are still waiting for an answer.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::decide::Scope;

/// Questions remembered at most: the oldest is forgotten first.
const QUESTIONS_KEPT: usize = 64;

/// A connection's grants and pending questions.
#[derive(Debug, Default)]
pub struct Approvals {
    /// What the user allowed for the rest of the session.
    grants: Mutex<Vec<Scope>>,
    /// Questions put to a protocol 2026-07-28 client (their fingerprints), with when: the
    /// answer comes with a retried call, and how long it took tells a person from a program.
    questions: Mutex<VecDeque<(String, Instant)>>,
    /// Destinations (`host`, port) the user let commands reach for the rest of the session.
    network: NetworkGrants,
}

/// Destinations the user let a session's commands reach, shared with the proxy's askers.
pub type NetworkGrants = std::sync::Arc<Mutex<Vec<(String, u16)>>>;

impl Approvals {
    /// The grants "allow for this session" answers created.
    pub fn grants(&self) -> Vec<Scope> {
        self.grants.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Records a grant.
    pub fn grant(&self, scope: Scope) {
        self.grants.lock().unwrap_or_else(PoisonError::into_inner).push(scope);
    }

    /// The destinations the user let this session's commands reach (shared: a command's
    /// asker adds to it).
    pub fn network_grants(&self) -> NetworkGrants {
        self.network.clone()
    }

    /// Notes that a question naming `nonce` was put to the client now.
    pub fn note_question(&self, nonce: &str) {
        let mut questions = self.questions.lock().unwrap_or_else(PoisonError::into_inner);
        if questions.len() >= QUESTIONS_KEPT {
            questions.pop_front();
        }
        questions.push_back((nonce.to_string(), Instant::now()));
    }

    /// Uses up the question naming `nonce`: how long ago it was put, if it was and has not been
    /// answered yet (an answer is taken once).
    pub fn take_question(&self, nonce: &str) -> Option<Duration> {
        let mut questions = self.questions.lock().unwrap_or_else(PoisonError::into_inner);
        let at = questions.iter().position(|(asked, _)| asked == nonce)?;
        questions.remove(at).map(|(_, asked)| asked.elapsed())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_question_is_answered_once_and_the_oldest_are_forgotten() {
        let approvals = Approvals::default();
        approvals.note_question("a");
        assert!(approvals.take_question("a").is_some());
        assert!(approvals.take_question("a").is_none(), "an answer is taken once");
        for n in 0..=QUESTIONS_KEPT {
            approvals.note_question(&n.to_string());
        }
        assert!(approvals.take_question("0").is_none(), "the oldest was forgotten");
        assert!(approvals.take_question(&QUESTIONS_KEPT.to_string()).is_some());
    }
}
