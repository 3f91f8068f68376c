//! [`IntoJsResult`]: what a native closure may return, and [`Convert`], its value on the way
//! to the JavaScript thread.

use napi::Env;
use napi::bindgen_prelude::{ToNapiValue, TypeName, Unknown};

/// A native closure's return value: anything napi-rs converts to JavaScript, or a
/// [`napi::Result`] (any `Result` whose error converts into a [`napi::Error`]) of one.
///
/// The conversion runs on the JavaScript thread once the closure has returned. An `Err`
/// rejects the promise with a JavaScript `Error` carrying its message (or with the very value
/// it holds, for an error made from a JavaScript value).
///
/// Sealed: the two blanket implementations below are all there is, so that a closure's type
/// alone decides how its value reaches JavaScript.
///
/// `Marker` only keeps the two blanket implementations apart ([`marker::Value`] for plain
/// values, [`marker::Fallible`] for `Result`s); the compiler infers it, so code never names it.
/// A plain value must have a JavaScript type name ([`TypeName`]), as every type `#[napi]`
/// functions return does; `Result` has none, which is what keeps it apart.
///
/// [`marker::Value`]: crate::marker::Value
/// [`marker::Fallible`]: crate::marker::Fallible
///
/// ```
/// use napi::bindgen_prelude::PromiseRaw;
/// use napi::{Env, Error, Status};
/// use tethered_napi::CallOptions;
///
/// /// `parse(text, { signal })`: a promise of the number, rejected when `text` is no number.
/// fn parse<'env>(
///     env: &'env Env,
///     text: String,
///     options: Option<CallOptions<'env>>,
/// ) -> napi::Result<PromiseRaw<'env, i64>> {
///     tethered_napi::spawn_native(env, options, move |_token| {
///         text.trim()
///             .parse::<i64>()
///             .map_err(|err| Error::new(Status::InvalidArg, format!("not a number: {err}")))
///     })
/// }
/// ```
pub trait IntoJsResult<Marker>: sealed::Sealed<Marker> + Send + 'static {
    /// The JavaScript value the promise resolves with.
    type Value: ToNapiValue + Send + 'static;

    /// The value, or the error the promise rejects with.
    ///
    /// # Errors
    ///
    /// The error an `Err` carries, which the promise rejects with.
    fn into_js_result(self) -> napi::Result<Self::Value>;
}

mod sealed {
    /// Implemented exactly where [`IntoJsResult`](super::IntoJsResult) is.
    pub trait Sealed<Marker> {}
}

impl<T> sealed::Sealed<marker::Value> for T where T: ToNapiValue + TypeName + Send + 'static {}

impl<T, E> sealed::Sealed<marker::Fallible> for Result<T, E>
where
    T: ToNapiValue + TypeName + Send + 'static,
    E: Into<napi::Error> + Send + 'static,
{
}

/// The [`IntoJsResult`] markers.
pub mod marker {
    /// The [`IntoJsResult`](crate::IntoJsResult) marker of a plain value (`u32`, `String`,
    /// `Vec<T>`, `Buffer`, a `#[napi(object)]` struct, ...).
    #[derive(Debug)]
    pub enum Value {}

    /// The [`IntoJsResult`](crate::IntoJsResult) marker of a `Result<T, E>` with
    /// `E: Into<napi::Error>`.
    #[derive(Debug)]
    pub enum Fallible {}
}

impl<T> IntoJsResult<marker::Value> for T
where
    T: ToNapiValue + TypeName + Send + 'static,
{
    type Value = T;

    fn into_js_result(self) -> napi::Result<T> {
        Ok(self)
    }
}

impl<T, E> IntoJsResult<marker::Fallible> for Result<T, E>
where
    T: ToNapiValue + TypeName + Send + 'static,
    E: Into<napi::Error> + Send + 'static,
{
    type Value = T;

    fn into_js_result(self) -> napi::Result<T> {
        self.map_err(Into::into)
    }
}

/// What a finished closure leaves behind: its value, converted on the JavaScript thread.
pub(crate) type Convert =
    Box<dyn for<'env> FnOnce(&'env Env) -> napi::Result<Unknown<'env>> + Send>;

/// Converts a closure's value on the JavaScript thread.
pub(crate) fn convert<V: ToNapiValue + Send + 'static>(value: napi::Result<V>) -> Convert {
    Box::new(move |env: &Env| value?.into_unknown(env))
}
