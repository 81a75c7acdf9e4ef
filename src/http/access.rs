//! Access control on the HTTP port (docs/access.md#the-http-port): `/` and `/api/status` are
//! the `status` class, every other path the `probe` class. The class is the routed resource's
//! (each resource is wrapped in its class's middleware), so the decision is made on the path
//! the router decoded and matched, never on the raw request path. `networks` is checked here
//! against the client's address; `signed` means HTTP Basic credentials (an access key and its
//! secret key), which the `AccessGuard` actor checks against the accounts it owns, counting
//! failed attempts per source. Refusals: 401 with a Basic challenge when credentials are missing
//! or wrong, 403 when the address, the transport or the account may not, 429 after too many
//! failed attempts. On the door's probe lane only `/health` and `/ready` are answered (503
//! otherwise), each connection closed after its answer.

use std::net::IpAddr;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, ContentType};
use actix_web::http::ConnectionType;
use actix_web::middleware::Next;
use actix_web::{web, HttpResponse};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use rmq_actors::access::guard::CheckHttp;
use rmq_actors::access::{check_basic, AccessClass, Accounts, Client, Refusal};
use rmq_actors::limits::{Limit, Refused};

use super::door::{ConnInfo, Lane};
use super::Observed;

/// The middleware of the `probe` resources that are not health probes (and of unknown paths).
pub(crate) async fn probe_class(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    enforce(AccessClass::Probe, false, req, next).await
}

/// The middleware of `/health` and `/ready`: the `probe` class, and answered on the probe lane.
pub(crate) async fn health_class(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    enforce(AccessClass::Probe, true, req, next).await
}

/// The middleware of the `status` resources: the page and its JSON.
pub(crate) async fn status_class(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    enforce(AccessClass::Status, false, req, next).await
}

/// Decides a request of `class` (the class of the resource the router matched) before its
/// handler runs; on the probe lane only health probes (`on_probe_lane`) are answered, and the
/// connection closes after its answer.
async fn enforce(
    class: AccessClass,
    on_probe_lane: bool,
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let info = req.conn_data::<ConnInfo>().copied();
    let lane = info.map_or(Lane::Ordinary, |i| i.lane);
    if lane == Lane::Probe && !on_probe_lane {
        return Ok(req.into_response(lane_full()));
    }
    let mut answer = decide(class, info, req, next).await?;
    if lane == Lane::Probe {
        answer
            .response_mut()
            .head_mut()
            .set_connection_type(ConnectionType::Close);
    }
    Ok(answer)
}

/// Only health probes are answered on the probe lane: the rest wait for an ordinary slot.
fn lane_full() -> HttpResponse {
    HttpResponse::ServiceUnavailable()
        .insert_header((header::RETRY_AFTER, "1"))
        .force_close()
        .content_type(ContentType::plaintext())
        .body("HTTP port busy: only /health and /ready are answered now; retry\n")
}

/// Access control of one request (see the module docs).
async fn decide(
    class: AccessClass,
    info: Option<ConnInfo>,
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let Some(observed) = req.app_data::<web::Data<Observed>>().cloned() else {
        // Not reachable (the app has its data); refuse rather than let a request through.
        return Ok(req.into_response(refusal_response(Refusal::AddressNotAllowed, class, None)));
    };
    let policy = observed.access.policies.of(class).clone();
    if policy.is_open() {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    }
    let Some(ip) = req.peer_addr().map(|a| a.ip()) else {
        return Ok(req.into_response(refusal_response(Refusal::AddressNotAllowed, class, None)));
    };
    let client = Client {
        ip,
        security: info.map(|i| i.security).unwrap_or_default(),
    };
    let basic = basic_credentials(&req);
    let decided = match &observed.access_guard {
        Some(guard) => guard
            .send(CheckHttp {
                class,
                policy,
                client,
                basic,
            })
            .await
            .unwrap_or(Err(Refusal::UnknownAccessKey)),
        // Networks only (a signed class needs the ACL file, hence the guard): no accounts.
        None => check_basic(
            &policy,
            class,
            &Accounts::default(),
            client,
            basic.as_ref().map(|(k, s)| (k.as_str(), s.as_str())),
            false,
        ),
    };
    match decided {
        Ok(_) => next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body),
        Err(refusal) => {
            observed.limits.do_send(Refused {
                limit: Limit::Access,
                source: Some(ip),
                detail: format!(
                    "HTTP {} {} refused: {}",
                    class.name(),
                    rmq_actors::logging::Clipped(req.path()),
                    refusal.name()
                ),
            });
            Ok(req.into_response(refusal_response(refusal, class, Some(ip))))
        }
    }
}

/// The `Authorization: Basic` credentials of a request, if well formed.
fn basic_credentials(req: &ServiceRequest) -> Option<(String, String)> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, encoded) = value.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") || encoded.len() > 4096 {
        return None;
    }
    let decoded = STANDARD.decode(encoded.trim()).ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (key, secret) = text.split_once(':')?;
    Some((key.to_owned(), secret.to_owned()))
}

fn refusal_response(refusal: Refusal, class: AccessClass, ip: Option<IpAddr>) -> HttpResponse {
    let remark = match (refusal, ip) {
        (Refusal::NoSignature, _) => format!(
            "[access] credentials needed: {} pages take HTTP Basic with an access key and its secret key",
            class.name()
        ),
        (_, Some(ip)) => refusal.remark(class, ip),
        (_, None) => "[access] the client's address is unknown".to_owned(),
    };
    let mut response = match refusal {
        Refusal::NoSignature | Refusal::UnknownAccessKey | Refusal::BadSignature => {
            let mut r = HttpResponse::Unauthorized();
            r.insert_header((header::WWW_AUTHENTICATE, "Basic realm=\"rmq-namesrv\""));
            r
        }
        Refusal::TooManyFailures => HttpResponse::TooManyRequests(),
        Refusal::AddressNotAllowed
        | Refusal::NotAdmin
        | Refusal::Disabled
        | Refusal::NeedsTls
        | Refusal::NeedsClientCert => HttpResponse::Forbidden(),
    };
    response
        .content_type(ContentType::plaintext())
        .body(format!("{remark}\n"))
}
