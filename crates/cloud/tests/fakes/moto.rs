//! `moto_server` (PyPI `moto[server]`, the EC2 API emulator) with IAM authentication on: the
//! first three actions (creating an IAM user, its policy and its access key, through boto3)
//! go unauthenticated, every later request must carry a valid SigV4 signature of that key.
//! Instances are made through boto3 in two regions.

use serde_json::Value;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running `moto_server` and the account made in it.
pub struct Moto {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// The IAM user's access key id.
    pub access_key_id: String,
    /// Its secret.
    pub secret_access_key: String,
    /// Instance ids by region: `{"us-east-1": [...], "eu-west-1": [...]}`.
    pub instances: Value,
    child: Child,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether moto and boto3 are installed (required in CI; elsewhere a test says it skips).
pub fn available() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import moto.server, boto3"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok && std::env::var_os("CI").is_some() {
        panic!("moto[server] and boto3 are required in CI (pip install 'moto[server]')");
    }
    if !ok {
        eprintln!("moto[server] is not installed: skipping the AWS tests");
    }
    ok
}

const SETUP: &str = r#"
import boto3, json, sys
url = sys.argv[1]
iam = boto3.client("iam", endpoint_url=url, region_name="us-east-1",
                   aws_access_key_id="setup", aws_secret_access_key="setup")
iam.create_user(UserName="trusthub")
iam.put_user_policy(UserName="trusthub", PolicyName="read", PolicyDocument=json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}]}))
key = iam.create_access_key(UserName="trusthub")["AccessKey"]
kw = dict(endpoint_url=url, aws_access_key_id=key["AccessKeyId"], aws_secret_access_key=key["SecretAccessKey"])
out = {"access_key_id": key["AccessKeyId"], "secret_access_key": key["SecretAccessKey"], "instances": {}}
for region, n, enc in (("us-east-1", 3, False), ("eu-west-1", 2, True)):
    ec2 = boto3.client("ec2", region_name=region, **kw)
    sg = ec2.create_security_group(GroupName="ssh-world", Description="ssh from anywhere")["GroupId"]
    ec2.authorize_security_group_ingress(GroupId=sg, IpPermissions=[
        {"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "IpRanges": [{"CidrIp": "0.0.0.0/0"}]}])
    image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
    ids = []
    for j in range(n):
        r = ec2.run_instances(ImageId=image, MinCount=1, MaxCount=1, InstanceType="t3.micro",
            SecurityGroupIds=[sg] if region == "us-east-1" else [],
            BlockDeviceMappings=[{"DeviceName": "/dev/sda1", "Ebs": {"VolumeSize": 8, "Encrypted": enc}}],
            TagSpecifications=[{"ResourceType": "instance", "Tags": [
                {"Key": "Name", "Value": f"{region}-vm-{j}"}, {"Key": "team", "Value": "ops"}]}])
        ids.append(r["Instances"][0]["InstanceId"])
    out["instances"][region] = ids
print(json.dumps(out))
"#;

const TERMINATE: &str = r#"
import boto3, sys
url, key, secret, region, iid = sys.argv[1:6]
boto3.client("ec2", region_name=region, endpoint_url=url, aws_access_key_id=key,
             aws_secret_access_key=secret).terminate_instances(InstanceIds=[iid])
"#;

impl Moto {
    /// Starts `moto_server` on a free port and makes the account and its instances.
    pub async fn start() -> Moto {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .expect("bind")
            .local_addr()
            .expect("addr")
            .port();
        let child = Command::new("python3")
            .args([
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .env("INITIAL_NO_AUTH_ACTION_COUNT", "3")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("moto_server");
        let url = format!("http://127.0.0.1:{port}");
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let out = tokio::process::Command::new("python3")
            .args(["-c", SETUP, &url])
            .output()
            .await
            .expect("boto3 setup");
        assert!(
            out.status.success(),
            "boto3 setup: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).expect("setup json");
        Moto {
            url,
            access_key_id: v["access_key_id"].as_str().expect("key").to_owned(),
            secret_access_key: v["secret_access_key"].as_str().expect("secret").to_owned(),
            instances: v["instances"].clone(),
            child,
        }
    }

    /// Terminates an instance through boto3.
    pub async fn terminate(&self, region: &str, id: &str) {
        let out = tokio::process::Command::new("python3")
            .args([
                "-c",
                TERMINATE,
                &self.url,
                &self.access_key_id,
                &self.secret_access_key,
                region,
                id,
            ])
            .output()
            .await
            .expect("boto3 terminate");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
