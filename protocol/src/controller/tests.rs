use super::*;
use crate::command::RemotingCommand;

/// Java's ext fields as a header class writes them, key by key.
fn java_ext(code: RequestCode, pairs: &[(&str, &str)]) -> RemotingCommand {
    RemotingCommand::request(code).with_ext_fields(pairs.iter().copied().collect())
}

/// Writes `header` into a command and reads it back.
fn round_trip<H: CommandHeader + PartialEq + fmt::Debug>(header: &H) {
    let cmd = RemotingCommand::request(RequestCode(0)).with_ext_fields(header.to_ext());
    assert_eq!(&H::decode(&cmd).unwrap(), header);
}

/// The ext keys `header` writes, sorted.
fn keys<H: CommandHeader>(header: &H) -> Vec<String> {
    let mut keys: Vec<String> = header.to_ext().iter().map(|(k, _)| k.to_owned()).collect();
    keys.sort();
    keys
}

/// Every required field of `H`, removed one at a time from `full`, is named by the error.
fn each_required_field_is_named<H: CommandHeader + fmt::Debug>(
    full: &[(&str, &str)],
    required: &[&'static str],
) {
    for missing in required {
        let pairs: Vec<(&str, &str)> = full.iter().copied().filter(|(k, _)| k != missing).collect();
        let err = H::decode(&java_ext(RequestCode(0), &pairs)).unwrap_err();
        assert_eq!(err, HeaderFieldError::Missing(missing));
        assert_eq!(
            err.to_string(),
            format!("the custom field <{missing}> is null")
        );
    }
    H::decode(&java_ext(RequestCode(0), full)).unwrap();
}

#[test]
fn request_codes_have_java_names() {
    for (code, name) in [
        (1001, "CONTROLLER_ALTER_SYNC_STATE_SET"),
        (1002, "CONTROLLER_ELECT_MASTER"),
        (1003, "CONTROLLER_REGISTER_BROKER"),
        (1004, "CONTROLLER_GET_REPLICA_INFO"),
        (1005, "CONTROLLER_GET_METADATA_INFO"),
        (1006, "CONTROLLER_GET_SYNC_STATE_DATA"),
        (1007, "GET_BROKER_EPOCH_CACHE"),
        (1008, "NOTIFY_BROKER_ROLE_CHANGED"),
        (1009, "UPDATE_CONTROLLER_CONFIG"),
        (1010, "GET_CONTROLLER_CONFIG"),
        (1011, "CLEAN_BROKER_DATA"),
        (1012, "CONTROLLER_GET_NEXT_BROKER_ID"),
        (1013, "CONTROLLER_APPLY_BROKER_ID"),
    ] {
        assert_eq!(RequestCode(code).name(), Some(name));
    }
    assert!(CONTROLLER_CODES.windows(2).all(|w| w[0] < w[1]));
    for code in CONTROLLER_CODES {
        assert!(code.name().is_some(), "{code:?}");
        // None of them is a NameServer code but the heartbeat both answer.
        assert_eq!(
            RequestCode::NAMESRV_CODES.contains(&code),
            code == RequestCode::BROKER_HEARTBEAT
        );
    }
}

#[test]
fn response_codes_are_2000_to_2016_with_java_names() {
    for (i, (code, name)) in CONTROLLER_RESPONSE_CODES.iter().enumerate() {
        assert_eq!(code.0, 2000 + i as i32);
        assert_eq!(response_code_name(*code), Some(*name));
        assert_eq!(code.name(), None, "not a NameServer code");
    }
    assert_eq!(ResponseCode::CONTROLLER_NOT_LEADER.0, 2007);
    assert_eq!(
        response_code_name(ResponseCode::CONTROLLER_MASTER_STILL_EXIST),
        Some("CONTROLLER_MASTER_STILL_EXIST")
    );
    assert_eq!(response_code_name(ResponseCode::SUCCESS), None);
    assert_eq!(response_code_name(ResponseCode(2017)), None);
}

#[test]
fn alter_sync_state_set_header() {
    let java = [
        ("brokerName", "broker-a"),
        ("masterBrokerId", "1"),
        ("masterEpoch", "3"),
        ("invokeTime", "1700000000000"),
    ];
    let h = AlterSyncStateSetHeader::decode(&java_ext(
        RequestCode::CONTROLLER_ALTER_SYNC_STATE_SET,
        &java,
    ))
    .unwrap();
    assert_eq!(
        h,
        AlterSyncStateSetHeader {
            broker_name: "broker-a".into(),
            master_broker_id: Some(1),
            master_epoch: 3,
            invoke_time: Some(1_700_000_000_000),
        }
    );
    round_trip(&h);
    assert_eq!(
        keys(&h),
        ["brokerName", "invokeTime", "masterBrokerId", "masterEpoch"]
    );
    each_required_field_is_named::<AlterSyncStateSetHeader>(&java, &["brokerName", "masterEpoch"]);
    // Without masterBrokerId Java answers CONTROLLER_INVALID_MASTER: not a header error.
    let no_master = AlterSyncStateSetHeader::decode(&java_ext(
        RequestCode(0),
        &[("brokerName", "b"), ("masterEpoch", "1")],
    ))
    .unwrap();
    assert_eq!(no_master.master_broker_id, None);
    round_trip(&no_master);
    let bad = AlterSyncStateSetHeader::decode(&java_ext(
        RequestCode(0),
        &[("brokerName", "b"), ("masterEpoch", "one")],
    ))
    .unwrap_err();
    assert_eq!(
        bad.to_string(),
        "the custom field <masterEpoch> is not a valid int: \"one\""
    );

    let resp = AlterSyncStateSetResponseHeader {
        new_sync_state_set_epoch: 4,
    };
    round_trip(&resp);
    assert_eq!(
        resp.to_ext().iter().collect::<Vec<_>>(),
        [("newSyncStateSetEpoch", "4")]
    );
    // A failure answer carries Java's primitive zero; reading an absent one gives it too.
    assert_eq!(
        AlterSyncStateSetResponseHeader::decode(&RemotingCommand::success())
            .unwrap()
            .new_sync_state_set_epoch,
        0
    );
}

#[test]
fn elect_master_headers() {
    // ElectMasterRequestHeader.ofBrokerTrigger and ofAdminTrigger.
    let broker = [
        ("clusterName", "DefaultCluster"),
        ("brokerName", "broker-a"),
        ("brokerId", "2"),
        ("designateElect", "false"),
        ("invokeTime", "1700000000000"),
    ];
    let h = ElectMasterHeader::decode(&java_ext(RequestCode::CONTROLLER_ELECT_MASTER, &broker))
        .unwrap();
    assert_eq!(
        h,
        ElectMasterHeader {
            cluster_name: "DefaultCluster".into(),
            broker_name: "broker-a".into(),
            broker_id: 2,
            designate_elect: false,
            invoke_time: Some(1_700_000_000_000),
        }
    );
    round_trip(&h);
    let admin = ElectMasterHeader {
        designate_elect: true,
        invoke_time: None,
        ..h.clone()
    };
    round_trip(&admin);
    assert_eq!(
        keys(&admin),
        ["brokerId", "brokerName", "clusterName", "designateElect"]
    );
    each_required_field_is_named::<ElectMasterHeader>(
        &broker,
        &["clusterName", "brokerName", "brokerId", "designateElect"],
    );
    let bad = ElectMasterHeader::decode(&java_ext(
        RequestCode(0),
        &[
            ("clusterName", "c"),
            ("brokerName", "b"),
            ("brokerId", "x"),
            ("designateElect", "TRUE"),
        ],
    ))
    .unwrap_err();
    assert_eq!(
        bad.to_string(),
        "the custom field <brokerId> is not a valid long: \"x\""
    );

    let resp = ElectMasterResponseHeader {
        master_broker_id: Some(2),
        master_address: Some("127.0.0.1:10921".into()),
        master_epoch: Some(5),
        sync_state_set_epoch: Some(6),
    };
    round_trip(&resp);
    assert_eq!(
        keys(&resp),
        [
            "masterAddress",
            "masterBrokerId",
            "masterEpoch",
            "syncStateSetEpoch"
        ]
    );
    // A failed election: Java's header with every field null, written as no keys.
    round_trip(&ElectMasterResponseHeader::default());
    assert!(ElectMasterResponseHeader::default().to_ext().is_empty());

    let notify = NotifyBrokerRoleChangedHeader::from(&resp);
    assert_eq!(notify.master_broker_id, Some(2));
    assert_eq!(notify.master_epoch, Some(5));
    assert_eq!(notify.sync_state_set_epoch, Some(6));
    assert_eq!(notify.master_address.as_deref(), Some("127.0.0.1:10921"));
}

#[test]
fn register_broker_to_controller_headers() {
    let java = [
        ("clusterName", "DefaultCluster"),
        ("brokerName", "broker-a"),
        ("brokerId", "1"),
        ("brokerAddress", "192.168.0.10:10911"),
        ("invokeTime", "1700000000000"),
    ];
    let h = RegisterBrokerToControllerHeader::decode(&java_ext(
        RequestCode::CONTROLLER_REGISTER_BROKER,
        &java,
    ))
    .unwrap();
    assert_eq!(h.broker_id, 1);
    assert_eq!(h.broker_address, "192.168.0.10:10911");
    round_trip(&h);
    each_required_field_is_named::<RegisterBrokerToControllerHeader>(
        &java,
        &["clusterName", "brokerName", "brokerId", "brokerAddress"],
    );

    // The master exists and is alive.
    let java_resp = [
        ("clusterName", "DefaultCluster"),
        ("brokerName", "broker-a"),
        ("masterBrokerId", "1"),
        ("masterAddress", "192.168.0.10:10911"),
        ("masterEpoch", "1"),
        ("syncStateSetEpoch", "2"),
    ];
    let resp =
        RegisterBrokerToControllerResponseHeader::decode(&java_ext(RequestCode(0), &java_resp))
            .unwrap();
    assert_eq!(resp.master_epoch, Some(1));
    assert_eq!(resp.sync_state_set_epoch, Some(2));
    round_trip(&resp);
    // No master: only the names.
    let names = RegisterBrokerToControllerResponseHeader {
        cluster_name: Some("DefaultCluster".into()),
        broker_name: Some("broker-a".into()),
        ..Default::default()
    };
    round_trip(&names);
    assert_eq!(keys(&names), ["brokerName", "clusterName"]);
}

#[test]
fn replica_info_and_metadata_headers() {
    let h = GetReplicaInfoHeader::decode(&java_ext(
        RequestCode::CONTROLLER_GET_REPLICA_INFO,
        &[("brokerName", "broker-a")],
    ))
    .unwrap();
    assert_eq!(h.broker_name, "broker-a");
    round_trip(&h);
    each_required_field_is_named::<GetReplicaInfoHeader>(
        &[("brokerName", "broker-a")],
        &["brokerName"],
    );

    let resp = GetReplicaInfoResponseHeader::decode(&java_ext(
        RequestCode(0),
        &[
            ("masterBrokerId", "1"),
            ("masterAddress", "127.0.0.1:10911"),
            ("masterEpoch", "2"),
        ],
    ))
    .unwrap();
    assert_eq!(
        resp,
        GetReplicaInfoResponseHeader {
            master_broker_id: Some(1),
            master_address: Some("127.0.0.1:10911".into()),
            master_epoch: Some(2),
        }
    );
    round_trip(&resp);
    // After a failed election: no master, the epoch only.
    let no_master = GetReplicaInfoResponseHeader {
        master_epoch: Some(3),
        ..Default::default()
    };
    round_trip(&no_master);
    assert_eq!(keys(&no_master), ["masterEpoch"]);

    // DLedger's answer on a follower.
    let java_meta = [
        ("group", "DefaultControllerGroup"),
        ("controllerLeaderId", "n1"),
        ("controllerLeaderAddress", "127.0.0.1:9879"),
        ("isLeader", "false"),
        ("peers", "n0:127.0.0.1:9878;n1:127.0.0.1:9879;"),
    ];
    let meta = GetMetadataResponseHeader::decode(&java_ext(RequestCode(0), &java_meta)).unwrap();
    assert_eq!(
        meta,
        GetMetadataResponseHeader {
            group: Some("DefaultControllerGroup".into()),
            controller_leader_id: Some("n1".into()),
            controller_leader_address: Some("127.0.0.1:9879".into()),
            is_leader: false,
            peers: Some("n0:127.0.0.1:9878;n1:127.0.0.1:9879;".into()),
        }
    );
    round_trip(&meta);
    // No leader yet: the boolean is still written.
    let leaderless = GetMetadataResponseHeader {
        group: Some("g".into()),
        peers: Some("n0:127.0.0.1:9878;".into()),
        ..Default::default()
    };
    round_trip(&leaderless);
    assert_eq!(keys(&leaderless), ["group", "isLeader", "peers"]);
    assert_eq!(leaderless.to_ext().get("isLeader"), Some("false"));
    let leader =
        GetMetadataResponseHeader::decode(&java_ext(RequestCode(0), &[("isLeader", "true")]))
            .unwrap();
    assert!(leader.is_leader);
}

#[test]
fn broker_id_headers() {
    let next = GetNextBrokerIdHeader::decode(&java_ext(
        RequestCode::CONTROLLER_GET_NEXT_BROKER_ID,
        &[
            ("clusterName", "DefaultCluster"),
            ("brokerName", "broker-a"),
        ],
    ))
    .unwrap();
    assert_eq!(next.cluster_name.as_deref(), Some("DefaultCluster"));
    round_trip(&next);
    each_required_field_is_named::<GetNextBrokerIdHeader>(
        &[
            ("clusterName", "DefaultCluster"),
            ("brokerName", "broker-a"),
        ],
        &["brokerName"],
    );
    let next_resp = GetNextBrokerIdResponseHeader {
        cluster_name: Some("DefaultCluster".into()),
        broker_name: Some("broker-a".into()),
        next_broker_id: Some(1),
    };
    round_trip(&next_resp);
    assert_eq!(
        GetNextBrokerIdResponseHeader::decode(&java_ext(RequestCode(0), &[("nextBrokerId", "3")]))
            .unwrap()
            .next_broker_id,
        Some(3)
    );

    let java_apply = [
        ("clusterName", "DefaultCluster"),
        ("brokerName", "broker-a"),
        ("appliedBrokerId", "2"),
        ("registerCheckCode", "192.168.0.11:10911;1700000000000"),
    ];
    let apply = ApplyBrokerIdHeader::decode(&java_ext(
        RequestCode::CONTROLLER_APPLY_BROKER_ID,
        &java_apply,
    ))
    .unwrap();
    assert_eq!(apply.applied_broker_id, 2);
    assert_eq!(apply.registered_address(), Some("192.168.0.11:10911"));
    round_trip(&apply);
    each_required_field_is_named::<ApplyBrokerIdHeader>(
        &java_apply,
        &[
            "clusterName",
            "brokerName",
            "appliedBrokerId",
            "registerCheckCode",
        ],
    );
    for (code, address) in [
        ("a:1", Some("a:1")),
        ("", Some("")),
        (";5", Some("")),
        (";", None),
        (";;", None),
    ] {
        let h = ApplyBrokerIdHeader {
            register_check_code: code.into(),
            ..apply.clone()
        };
        assert_eq!(h.registered_address(), address, "{code:?}");
    }
    let apply_resp = ApplyBrokerIdResponseHeader {
        cluster_name: Some("DefaultCluster".into()),
        broker_name: Some("broker-a".into()),
    };
    round_trip(&apply_resp);
    assert_eq!(keys(&apply_resp), ["brokerName", "clusterName"]);
}

#[test]
fn clean_broker_data_header() {
    let java = [
        ("clusterName", "DefaultCluster"),
        ("brokerName", "broker-a"),
        ("brokerControllerIdsToClean", "1;2;3"),
        ("isCleanLivingBroker", "false"),
        ("invokeTime", "1700000000000"),
    ];
    let h =
        CleanBrokerDataHeader::decode(&java_ext(RequestCode::CLEAN_BROKER_DATA, &java)).unwrap();
    assert_eq!(h.cluster_name.as_deref(), Some("DefaultCluster"));
    assert!(!h.clean_living_broker);
    assert_eq!(h.ids_to_clean().unwrap(), Some(BTreeSet::from([1, 2, 3])));
    round_trip(&h);
    each_required_field_is_named::<CleanBrokerDataHeader>(&java, &["brokerName"]);
    // Only brokerName given (the admin passed neither -c nor -b): the whole set.
    let bare = CleanBrokerDataHeader::decode(&java_ext(
        RequestCode(0),
        &[("brokerName", "broker-a"), ("isCleanLivingBroker", "true")],
    ))
    .unwrap();
    assert!(bare.clean_living_broker);
    assert_eq!(bare.ids_to_clean().unwrap(), None);
    round_trip(&bare);
    assert_eq!(keys(&bare), ["brokerName", "isCleanLivingBroker"]);

    let ids = |text: &str| {
        CleanBrokerDataHeader {
            broker_controller_ids_to_clean: Some(text.into()),
            ..Default::default()
        }
        .ids_to_clean()
    };
    assert_eq!(ids("  ").unwrap(), None);
    assert_eq!(ids("7").unwrap(), Some(BTreeSet::from([7])));
    assert_eq!(ids("1;2;;").unwrap(), Some(BTreeSet::from([1, 2])));
    assert_eq!(ids(";").unwrap(), Some(BTreeSet::new()));
    assert_eq!(ids("1;;2").unwrap_err(), InvalidBrokerId(String::new()));
    let err = ids("1; 2").unwrap_err();
    assert_eq!(
        format!(
            "Please set the option <brokerControllerIdsToClean> according to the format, exception: {err}"
        ),
        "Please set the option <brokerControllerIdsToClean> according to the format, exception: java.lang.NumberFormatException: For input string: \" 2\""
    );
}

#[test]
fn notification_headers() {
    let java = [
        ("masterAddress", "127.0.0.1:10921"),
        ("masterEpoch", "2"),
        ("syncStateSetEpoch", "3"),
        ("masterBrokerId", "2"),
    ];
    let h = NotifyBrokerRoleChangedHeader::decode(&java_ext(
        RequestCode::NOTIFY_BROKER_ROLE_CHANGED,
        &java,
    ))
    .unwrap();
    assert_eq!(
        h,
        NotifyBrokerRoleChangedHeader {
            master_address: Some("127.0.0.1:10921".into()),
            master_epoch: Some(2),
            sync_state_set_epoch: Some(3),
            master_broker_id: Some(2),
        }
    );
    round_trip(&h);

    // RouteInfoManager.notifyMinBrokerIdChanged sets all but brokerName.
    let java_min = [
        ("minBrokerId", "1"),
        ("minBrokerAddr", "127.0.0.1:10921"),
        ("offlineBrokerAddr", "127.0.0.1:10911"),
        ("haBrokerAddr", "127.0.0.1:10922"),
    ];
    let min = NotifyMinBrokerIdChangeHeader::decode(&java_ext(
        RequestCode::NOTIFY_MIN_BROKER_ID_CHANGE,
        &java_min,
    ))
    .unwrap();
    assert_eq!(min.min_broker_id, Some(1));
    assert_eq!(min.broker_name, None);
    assert_eq!(min.offline_broker_addr.as_deref(), Some("127.0.0.1:10911"));
    round_trip(&min);
    assert_eq!(
        keys(&min),
        [
            "haBrokerAddr",
            "minBrokerAddr",
            "minBrokerId",
            "offlineBrokerAddr"
        ]
    );
    round_trip(&NotifyMinBrokerIdChangeHeader::default());
}

#[test]
fn heartbeat_reuses_the_namesrv_header() {
    // BrokerOuterAPI.sendHeartbeatToController: every field set.
    let java = [
        ("clusterName", "DefaultCluster"),
        ("brokerAddr", "127.0.0.1:10911"),
        ("brokerName", "broker-a"),
        ("brokerId", "1"),
        ("epoch", "2"),
        ("maxOffset", "4096"),
        ("confirmOffset", "4000"),
        ("heartbeatTimeoutMills", "10000"),
        ("electionPriority", "2147483647"),
    ];
    let h = BrokerHeartbeatHeader::decode(&java_ext(RequestCode::BROKER_HEARTBEAT, &java)).unwrap();
    assert_eq!(h.broker_id, Some(1));
    assert_eq!(h.heartbeat_timeout_mills, Some(10_000));
    assert_eq!(h.election_priority, Some(i32::MAX));
    round_trip(&h);
}

/// Decodes a Java-shaped sample, checks it re-encodes to the same bytes, returns it.
fn java_body<T: ControllerBody + fmt::Debug + PartialEq>(java: &str) -> T {
    let value = T::decode(Some(java.as_bytes())).unwrap();
    assert_eq!(std::str::from_utf8(&value.encode()).unwrap(), java);
    value
}

#[test]
fn sync_state_set_body() {
    let set: SyncStateSet = java_body(r#"{"syncStateSet":[1,2],"syncStateSetEpoch":3}"#);
    assert_eq!(
        set,
        SyncStateSet {
            sync_state_set: BTreeSet::from([1, 2]),
            sync_state_set_epoch: 3,
        }
    );
    // After a failed election the set may be empty.
    let empty: SyncStateSet = java_body(r#"{"syncStateSet":[],"syncStateSetEpoch":0}"#);
    assert!(empty.sync_state_set.is_empty());
    // Java's HashSet order is not ours; a set reads the same in any order.
    let unordered =
        SyncStateSet::decode(Some(br#"{"syncStateSetEpoch":3,"syncStateSet":[2,1]}"#)).unwrap();
    assert_eq!(unordered, set);
    // The epoch is a Java int: absent is 0. The set is required.
    assert_eq!(
        SyncStateSet::decode(Some(br#"{"syncStateSet":[1]}"#))
            .unwrap()
            .sync_state_set_epoch,
        0
    );
    let err = SyncStateSet::decode(Some(br#"{"syncStateSetEpoch":1}"#)).unwrap_err();
    assert!(
        err.to_string().contains("missing field `syncStateSet`"),
        "{err}"
    );
    assert!(
        err.to_string().starts_with("bad SyncStateSet body: "),
        "{err}"
    );
    let none = SyncStateSet::decode(None).unwrap_err();
    assert_eq!(none.to_string(), "the command carries no SyncStateSet body");
    assert!(SyncStateSet::decode(Some(b"")).is_err());
    // Not an array of field values, as fastjson.
    assert!(SyncStateSet::decode(Some(b"[[1],1]")).is_err());
}

#[test]
fn elect_master_body() {
    // A new master: the set is the master alone, with the broker set's members.
    let elected: ElectMasterResponseBody = java_body(
        r#"{"brokerMemberGroup":{"brokerAddrs":{1:"127.0.0.1:10911",2:"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster"},"syncStateSet":[2]}"#,
    );
    let group = elected.broker_member_group.as_ref().unwrap();
    assert_eq!(group.broker_addrs[&2], "127.0.0.1:10921");
    assert_eq!(group.cluster.as_deref(), Some("DefaultCluster"));
    assert_eq!(elected.sync_state_set, BTreeSet::from([2]));
    // CONTROLLER_MASTER_STILL_EXIST: the current set only.
    let kept: ElectMasterResponseBody = java_body(r#"{"syncStateSet":[1,2]}"#);
    assert_eq!(kept.broker_member_group, None);
    // Standard JSON (quoted keys) reads the same.
    let quoted = ElectMasterResponseBody::decode(Some(
        br#"{"brokerMemberGroup":{"brokerAddrs":{"1":"127.0.0.1:10911","2":"127.0.0.1:10921"},"brokerName":"broker-a","cluster":"DefaultCluster"},"syncStateSet":[2]}"#,
    ))
    .unwrap();
    assert_eq!(quoted, elected);
    // Everything has a Java default.
    assert_eq!(
        ElectMasterResponseBody::decode(Some(b"{}")).unwrap(),
        ElectMasterResponseBody::default()
    );
}

#[test]
fn sync_state_data_bodies() {
    let names: BrokerNameList = java_body(r#"["broker-a","broker-b"]"#);
    assert_eq!(names.0, ["broker-a", "broker-b"]);
    assert!(BrokerNameList::decode(Some(br#"{"a":1}"#)).is_err());

    let java = r#"{"replicasInfoTable":{"broker-a":{"inSyncReplicas":[{"alive":true,"brokerAddress":"127.0.0.1:10911","brokerId":1,"brokerName":"broker-a"}],"masterAddress":"127.0.0.1:10911","masterBrokerId":1,"masterEpoch":2,"notInSyncReplicas":[{"alive":false,"brokerAddress":"127.0.0.1:10921","brokerId":2,"brokerName":"broker-a"}],"syncStateSetEpoch":3}}}"#;
    let info: BrokerReplicasInfo = java_body(java);
    let a = &info.replicas_info_table["broker-a"];
    assert_eq!(a.master_broker_id, Some(1));
    assert_eq!(a.master_epoch, 2);
    assert_eq!(a.sync_state_set_epoch, 3);
    assert_eq!(a.in_sync_replicas[0].alive, Some(true));
    assert_eq!(a.not_in_sync_replicas[0].broker_id, 2);
    // No master after a failed election: Java leaves both out.
    let leaderless: BrokerReplicasInfo = java_body(
        r#"{"replicasInfoTable":{"broker-a":{"inSyncReplicas":[],"masterEpoch":3,"notInSyncReplicas":[{"alive":false,"brokerAddress":"127.0.0.1:10911","brokerId":1,"brokerName":"broker-a"}],"syncStateSetEpoch":3}}}"#,
    );
    assert_eq!(
        leaderless.replicas_info_table["broker-a"].master_address,
        None
    );
    let _: BrokerReplicasInfo = java_body(r#"{"replicasInfoTable":{}}"#);

    let missing_list = r#"{"replicasInfoTable":{"broker-a":{"inSyncReplicas":[],"masterEpoch":1,"syncStateSetEpoch":1}}}"#;
    let err = BrokerReplicasInfo::decode(Some(missing_list.as_bytes())).unwrap_err();
    assert!(
        err.to_string()
            .contains("missing field `notInSyncReplicas`"),
        "{err}"
    );
    let missing_id = r#"{"replicasInfoTable":{"broker-a":{"inSyncReplicas":[{"alive":true,"brokerAddress":"a","brokerName":"broker-a"}],"notInSyncReplicas":[]}}}"#;
    let err = BrokerReplicasInfo::decode(Some(missing_id.as_bytes())).unwrap_err();
    assert!(
        err.to_string().contains("missing field `brokerId`"),
        "{err}"
    );
}

#[test]
fn epoch_cache_body() {
    let java = r#"{"brokerId":0,"brokerName":"broker-a","clusterName":"DefaultCluster","epochList":[{"endOffset":1024,"epoch":1,"startOffset":0},{"endOffset":9223372036854775807,"epoch":2,"startOffset":1024}],"maxOffset":2048}"#;
    let cache: EpochEntryCache = java_body(java);
    assert_eq!(cache.broker_name.as_deref(), Some("broker-a"));
    assert_eq!(cache.max_offset, 2048);
    assert_eq!(
        cache.epoch_list,
        [
            EpochEntry {
                end_offset: 1024,
                epoch: 1,
                start_offset: 0
            },
            EpochEntry {
                end_offset: i64::MAX,
                epoch: 2,
                start_offset: 1024
            },
        ]
    );
    let err = EpochEntryCache::decode(Some(br#"{"brokerId":0,"maxOffset":1}"#)).unwrap_err();
    assert!(
        err.to_string().contains("missing field `epochList`"),
        "{err}"
    );
    let err = EpochEntryCache::decode(Some(br#"{"epochList":[{"epoch":1,"startOffset":0}]}"#))
        .unwrap_err();
    assert!(
        err.to_string().contains("missing field `endOffset`"),
        "{err}"
    );
    // Names are display-only in Java (printed as null): optional.
    let bare: EpochEntryCache = java_body(r#"{"brokerId":1,"epochList":[],"maxOffset":0}"#);
    assert_eq!(bare.cluster_name, None);
}

#[test]
fn bodies_are_legacy_json() {
    // The one integer-keyed map stays bare in what we write, as fastjson's default.
    let body = ElectMasterResponseBody {
        broker_member_group: Some(BrokerMemberGroup {
            broker_addrs: BTreeMap::from([(1, "h:1".to_owned())]),
            broker_name: None,
            cluster: None,
        }),
        sync_state_set: BTreeSet::from([1]),
    };
    assert_eq!(
        body.encode(),
        br#"{"brokerMemberGroup":{"brokerAddrs":{1:"h:1"}},"syncStateSet":[1]}"#
    );
}
