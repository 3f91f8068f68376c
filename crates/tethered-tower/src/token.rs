//! [`RequestToken`]: a request's token, as the layer puts it in the request's extensions.

use http::Extensions;
use tethered::CancelToken;

/// A request's [`CancelToken`], which [`RequestTokenLayer`](crate::RequestTokenLayer) puts in
/// every request's extensions: cancelled with `Dropped` when the client goes away, `Timeout`
/// at the request's deadline, `Shutdown` when the server's token is.
///
/// Spawn the request's jobs as its children (`JobOptions::new().child_of(&token)`), so they stop with
/// it, with the reason. In axum (feature `axum`) it is an extractor; in tonic (feature
/// `tonic`), `from_tonic` reads it from the handler's request.
///
/// ```
/// use http::Request;
/// use tethered::CancelSource;
/// use tethered_tower::RequestToken;
///
/// let server = CancelSource::new();
/// let mut request = Request::new(());
/// request.extensions_mut().insert(RequestToken::new(server.token()));
/// let token = RequestToken::from_extensions(request.extensions())?;
/// assert!(!token.is_cancelled());
/// # Ok::<(), tethered_tower::NoRequestToken>(())
/// ```
#[derive(Clone, Debug)]
pub struct RequestToken(CancelToken);

impl RequestToken {
    /// A request token holding `token`.
    pub fn new(token: CancelToken) -> Self {
        RequestToken(token)
    }

    /// The token.
    pub fn token(&self) -> &CancelToken {
        &self.0
    }

    /// The token.
    pub fn into_token(self) -> CancelToken {
        self.0
    }

    /// The token the layer put in `extensions`.
    ///
    /// # Errors
    ///
    /// [`NoRequestToken`] if no [`RequestTokenLayer`](crate::RequestTokenLayer) ran for the
    /// request.
    pub fn from_extensions(extensions: &Extensions) -> Result<CancelToken, NoRequestToken> {
        extensions
            .get::<RequestToken>()
            .map(|token| token.0.clone())
            .ok_or(NoRequestToken)
    }
}

#[cfg(feature = "tonic")]
impl RequestToken {
    /// The token the layer gave a tonic request: tonic hands the HTTP request's extensions to
    /// the handler's request, when the server runs the layer
    /// (`Server::builder().layer(RequestTokenLayer::new(..))`).
    ///
    /// # Errors
    ///
    /// [`NoRequestToken`] if the server does not run the layer.
    ///
    /// ```
    /// use tethered::CancelSource;
    /// use tethered_tower::RequestToken;
    ///
    /// // What a handler gets: `async fn say(&self, request: tonic::Request<M>) -> ...`
    /// let server = CancelSource::new();
    /// let mut request = tonic::Request::new("hello");
    /// request.extensions_mut().insert(RequestToken::new(server.token()));
    ///
    /// let token = RequestToken::from_tonic(&request)?;
    /// assert!(!token.is_cancelled());
    /// # Ok::<(), tethered_tower::NoRequestToken>(())
    /// ```
    pub fn from_tonic<T>(request: &tonic::Request<T>) -> Result<CancelToken, NoRequestToken> {
        request
            .extensions()
            .get::<RequestToken>()
            .map(|token| token.0.clone())
            .ok_or(NoRequestToken)
    }
}

/// A request had no [`RequestToken`]: no [`RequestTokenLayer`](crate::RequestTokenLayer) ran
/// for it (the router or server does not have the layer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NoRequestToken;

impl std::fmt::Display for NoRequestToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(
            "the request has no token: add tethered_tower::RequestTokenLayer to the router or server",
        )
    }
}

impl std::error::Error for NoRequestToken {}

impl std::ops::Deref for RequestToken {
    type Target = CancelToken;

    fn deref(&self) -> &CancelToken {
        &self.0
    }
}

#[cfg(feature = "axum")]
impl<S: Send + Sync> axum_core::extract::FromRequestParts<S> for RequestToken {
    type Rejection = (http::StatusCode, &'static str);

    async fn from_request_parts(
        parts: &mut http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<RequestToken>().cloned().ok_or((
            http::StatusCode::INTERNAL_SERVER_ERROR,
            "RequestToken extractor: the router has no tethered_tower::RequestTokenLayer",
        ))
    }
}
