//! Access control and the audit of one connection's requests (docs/access.md): each request of
//! a restricted class is decided here, on the connection's thread, with the thread's accounts
//! snapshot and failed-attempt ledger (each failure also goes to the server-wide ledger of the
//! access guard); an audited request leaves its draft until its answer.

use super::*;
use crate::access::{self, AccessClass, Refusal};
use crate::codes::Row;

impl Connection {
    /// Takes the audit draft of `slot` back.
    pub(super) fn take_audit(&mut self, slot: Option<u32>) -> Option<AuditDraft> {
        let slot = slot?;
        let at = self.audits.iter().position(|(s, _)| *s == slot)?;
        Some(self.audits.swap_remove(at).1)
    }

    /// Access control of one request (crate::access): the policy of its row's class, with this
    /// thread's accounts and failed-attempt ledger; an audited request gets its draft. Only a
    /// code with a row gets here (one without is not answered), and only when a policy is not
    /// open or the row is audited (with every class open and no audit, nothing is decided).
    /// A refusal is the answer; one for a failed attempt waits until the access guard has
    /// counted it server-wide.
    pub(super) fn authorize(
        &mut self,
        row: &Row,
        cmd: &RemotingCommand,
        reply_to: &mut ReplyTo,
    ) -> Result<(), Outcome> {
        let class = row.access;
        let services = &self.share.services;
        let policy = services.access.policies.of(class);
        let mut access_key = None;
        if !policy.is_open() {
            let ip = self.peer.ip();
            let now = Instant::now();
            let accounts = access::accounts_on_this_thread(services.route_cache);
            let blocked =
                access::failures_on_this_thread(services.route_cache, &services.access, |l| {
                    l.blocked(ip, now)
                });
            let client = access::Client {
                ip,
                security: self.security,
            };
            match access::check(policy, class, &accounts, client, cmd, blocked) {
                Ok(grant) => access_key = grant.access_key,
                Err(refusal) => {
                    let counted = self.access_refused(cmd, class, refusal, now);
                    let response = refusal.response(class, ip);
                    if let Some(draft) = AuditDraft::of(row.audit, cmd, self.peer, None) {
                        self.share.services.audit.do_send(draft.finish(&response));
                    }
                    return Err(match counted {
                        Some(counted) => Outcome::Later(Box::pin(async move {
                            // Refused either way; a guard that is gone counts nothing more.
                            let _ = counted.await;
                            Ok(response)
                        })),
                        None => Outcome::Now(response),
                    });
                }
            }
        }
        if let Some(draft) = AuditDraft::of(row.audit, cmd, self.peer, access_key.as_deref()) {
            let slot = self.next_audit;
            self.next_audit = self.next_audit.wrapping_add(1);
            self.audits.push((slot, draft));
            reply_to.audit = Some(slot);
        }
        Ok(())
    }

    /// Counts and logs (rate-limited per source) a request access control refused; a guessed
    /// key or secret counts toward the source's failed attempts, here and at the access guard,
    /// whose answer (the attempt counted server-wide) is returned.
    fn access_refused(
        &mut self,
        cmd: &RemotingCommand,
        class: AccessClass,
        refusal: Refusal,
        now: Instant,
    ) -> Option<actix::dev::RecipientRequest<access::AttemptFailed>> {
        let ip = self.peer.ip();
        let mut blocked_now = false;
        let mut counted = None;
        if refusal.is_failed_attempt() {
            let services = &self.share.services;
            let blocks =
                access::failures_on_this_thread(services.route_cache, &services.access, |l| {
                    l.failed(ip, now)
                });
            blocked_now = !blocks.is_empty();
            counted = services
                .failed_attempts
                .as_ref()
                .map(|guard| guard.send(access::AttemptFailed { ip, at: now }));
        }
        self.share
            .count(|m| m.access_refused(class.name(), refusal.name()));
        let mut detail = format!(
            "{} request {} refused: {}",
            class.name(),
            cmd.request_code(),
            refusal.name()
        );
        if blocked_now {
            detail.push_str("; failed attempts used up, signed requests refused for a while");
        }
        self.refused(Limit::Access, detail);
        counted
    }
}
