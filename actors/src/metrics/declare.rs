//! The macro that turns the table of crate::metrics into code: from each row, a field of
//! `WorkerMetrics` and the methods that count into it, a field of `WorkerSnapshot`, the copy,
//! the merge, and the row's families in `WorkerSnapshot::families`. Its names (`Counted`,
//! `Figure`, `Family`, `Kind`, `Every`, `Sample`) are those in scope where it is used.

/// `counted { rows }` are counted by the connection threads; `sampled { rows }` are gauges a
/// thread reports when a scrape asks (the scrape's visit sets them), with no field on the
/// thread. A row:
///
/// ```text
/// /// doc
/// field: ThreadType => CopyType,                       (sampled rows: field: CopyType,)
///     shown [Kind "name" "help" ["label", ...] every Every::..., ...],   (none: shown [])
///     counted by { /// doc
///                  fn method(arg: Type, ...) => op(expr, ...); ... }    (counted rows only)
/// ```
///
/// `method` is a method of `WorkerMetrics` that calls `op` on the row's field; `every` is
/// optional (default `Every::Counted`); a row shows one family per kind.
macro_rules! declare_worker_metrics {
    (@every) => { Every::Counted };
    (@every $every:expr) => { $every };
    (@family $kind:ident $name:literal $help:literal [$($label:literal),*] $($every:expr)?) => {
        Family {
            name: $name,
            help: $help,
            kind: Kind::$kind,
            labels: &[$($label),*],
            every: declare_worker_metrics!(@every $($every)?),
        }
    };
    (
        counted {$(
            $(#[$doc:meta])*
            $field:ident: $counted:ty => $copy:ty,
                shown [$($kind:ident $name:literal $help:literal [$($label:literal),*]
                    $(every $every:expr)?),*],
                counted by {$(
                    $(#[$method_doc:meta])*
                    fn $method:ident($($arg:ident: $arg_type:ty),*) => $op:ident($($op_arg:expr),*);
                )*}
        )*}
        sampled {$(
            $(#[$sampled_doc:meta])*
            $sampled:ident: $sampled_type:ty,
                shown [$($sampled_kind:ident $sampled_name:literal $sampled_help:literal
                    [$($sampled_label:literal),*]),*]
        )*}
    ) => {
        /// What the connections of one thread counted, for one NameServer.
        #[derive(Debug, Default)]
        pub struct WorkerMetrics {
            $($(#[$doc])* $field: $counted,)*
        }

        impl WorkerMetrics {
            $($(
                $(#[$method_doc])*
                pub fn $method(&mut self, $($arg: $arg_type),*) {
                    self.$field.$op($($op_arg),*)
                }
            )*)*

            /// A copy, to send to the scraper.
            pub fn snapshot(&self) -> WorkerSnapshot {
                WorkerSnapshot {
                    $($field: Counted::copy(&self.$field),)*
                    $($sampled: Default::default(),)*
                }
            }
        }

        /// The figures of one or more worker threads.
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct WorkerSnapshot {
            $($(#[$doc])* pub $field: $copy,)*
            $($(#[$sampled_doc])* pub $sampled: $sampled_type,)*
        }

        impl WorkerSnapshot {
            /// Adds another thread's figures.
            pub fn merge(&mut self, other: &WorkerSnapshot) {
                $(Figure::merge(&mut self.$field, &other.$field);)*
                $(Figure::merge(&mut self.$sampled, &other.$sampled);)*
            }

            /// Every family of the table, in its order, with its samples.
            pub fn families(&self) -> Vec<(Family, Vec<Sample>)> {
                vec![
                    $($((
                        declare_worker_metrics!(@family $kind $name $help [$($label),*] $($every)?),
                        Figure::samples(&self.$field, Kind::$kind),
                    ),)*)*
                    $($((
                        declare_worker_metrics!(
                            @family $sampled_kind $sampled_name $sampled_help [$($sampled_label),*]
                        ),
                        Figure::samples(&self.$sampled, Kind::$sampled_kind),
                    ),)*)*
                ]
            }
        }
    };
}

pub(super) use declare_worker_metrics;
