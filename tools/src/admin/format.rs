//! Text layouts: aligned tables, mqadmin's clusterList table, a NameServer's and a controller's
//! configuration, absent values as Java prints them.

use std::collections::BTreeMap;

use rmq_protocol::body::ClusterInfo;

/// Columns padded to their widest cell, two spaces apart; the last column is not padded.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header = header.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>();
    for row in std::iter::once(&header).chain(rows) {
        let last = row.len().saturating_sub(1);
        let mut line = String::new();
        for (i, (cell, width)) in row.iter().zip(&widths).enumerate() {
            if i == last {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  "));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// mqadmin's clusterList columns: one row per broker instance, sorted by cluster, broker, id.
pub fn cluster_table(info: &ClusterInfo) -> String {
    let mut rows = Vec::new();
    for (cluster, brokers) in &info.cluster_addr_table {
        for broker in brokers {
            // A broker name without a BrokerData is skipped, as mqadmin does.
            let Some(data) = info.broker_addr_table.get(broker) else {
                continue;
            };
            for (id, addr) in &data.broker_addrs {
                rows.push(vec![
                    cluster.clone(),
                    broker.clone(),
                    id.to_string(),
                    addr.clone(),
                ]);
            }
        }
    }
    table(&["#Cluster Name", "#Broker Name", "#BID", "#Addr"], &rows)
}

/// One NameServer's configuration: a `============addr============` line (as mqadmin), then
/// `key = value` lines in key order.
pub(super) fn config_block(addr: &str, config: &BTreeMap<String, String>) -> String {
    let mut out = format!("============{addr}============\n");
    for (key, value) in config {
        out.push_str(&format!("{key} = {value}\n"));
    }
    out
}

/// One controller's configuration as mqadmin's getControllerConfig prints it: the
/// `============addr============` line, then `key` padded to 50 columns, `=  value`, in key order.
pub(super) fn controller_config_block(addr: &str, config: &BTreeMap<String, String>) -> String {
    let mut out = format!("============{addr}============\n");
    for (key, value) in config {
        out.push_str(&format!("{key:<50}=  {value}\n"));
    }
    out
}

/// A value as Java's `printf("%s")` prints it: `null` when absent.
pub(super) fn java_text<T: std::fmt::Display>(value: Option<T>) -> String {
    value.map_or_else(|| "null".to_owned(), |v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmq_protocol::body::BrokerData;

    #[test]
    fn tables_align_and_do_not_pad_the_last_column() {
        let rows = vec![
            vec![
                "c1".to_owned(),
                "broker-long-name".to_owned(),
                "x".to_owned(),
            ],
            vec!["cluster-2".to_owned(), "b".to_owned(), "".to_owned()],
        ];
        assert_eq!(
            table(&["#A", "#B", "#C"], &rows),
            "#A         #B                #C\n\
             c1         broker-long-name  x\n\
             cluster-2  b\n"
        );
        assert_eq!(table(&["#Only"], &[]), "#Only\n");
    }

    #[test]
    fn cluster_rows_sorted_by_cluster_broker_id() {
        let mut info = ClusterInfo::default();
        for (name, addrs) in [
            ("broker-b", vec![(0, "127.0.0.1:10921")]),
            (
                "broker-a",
                vec![(1, "127.0.0.1:10912"), (0, "127.0.0.1:10911")],
            ),
        ] {
            info.broker_addr_table.insert(
                name.to_owned(),
                BrokerData {
                    broker_addrs: addrs
                        .into_iter()
                        .map(|(id, a)| (id, a.to_owned()))
                        .collect(),
                    broker_name: name.to_owned(),
                    cluster: "DefaultCluster".to_owned(),
                    ..BrokerData::default()
                },
            );
        }
        info.cluster_addr_table.insert(
            "DefaultCluster".to_owned(),
            ["broker-b", "broker-a", "ghost"]
                .into_iter()
                .map(str::to_owned)
                .collect(),
        );
        assert_eq!(
            cluster_table(&info),
            "#Cluster Name   #Broker Name  #BID  #Addr\n\
             DefaultCluster  broker-a      0     127.0.0.1:10911\n\
             DefaultCluster  broker-a      1     127.0.0.1:10912\n\
             DefaultCluster  broker-b      0     127.0.0.1:10921\n"
        );
    }
}
